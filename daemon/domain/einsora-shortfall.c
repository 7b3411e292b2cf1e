#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-shortfall.h"

EinsoraShortfall *
einsora_shortfall_new(void)
{
    return g_new0(EinsoraShortfall, 1);
}

EinsoraShortfall *
einsora_shortfall_copy(const EinsoraShortfall *shortfall)
{
    EinsoraShortfall *copy = g_memdup2(shortfall, sizeof *shortfall);

    copy->driver = g_strdup(shortfall->driver);
    return copy;
}

void
einsora_shortfall_free(EinsoraShortfall *shortfall)
{
    if (shortfall == NULL)
        return;
    g_free(shortfall->driver);
    g_free(shortfall);
}

static EinsoraShortfallAmount *
amount_of(EinsoraShortfall *shortfall, EinsoraShortfallKind kind)
{
    switch (kind) {
    case EINSORA_SHORTFALL_GPUS:
        return &shortfall->gpus;
    case EINSORA_SHORTFALL_CPUS:
        return &shortfall->cpus;
    case EINSORA_SHORTFALL_MEMORY:
        return &shortfall->memory_mib;
    case EINSORA_SHORTFALL_UNITS:
        return &shortfall->units;
    case EINSORA_SHORTFALL_DRIVER:
        return &shortfall->driver_slots;
    default:
        g_return_val_if_reached(NULL);
    }
}

void
einsora_shortfall_measure(EinsoraShortfall *shortfall, EinsoraShortfallKind kind, gint64 requested,
                          gint64 free)
{
    EinsoraShortfallAmount *amount = amount_of(shortfall, kind);

    g_return_if_fail(amount != NULL);
    amount->requested = requested;
    amount->free = MAX(free, 0);
    if (free < requested)
        shortfall->short_of |= kind;
    else
        shortfall->short_of &= ~(guint)kind;
}

const EinsoraShortfallAmount *
einsora_shortfall_amount(const EinsoraShortfall *shortfall, EinsoraShortfallKind kind)
{
    return amount_of((EinsoraShortfall *)shortfall, kind);
}

guint
einsora_shortfall_count(const EinsoraShortfall *shortfall)
{
    return (guint)__builtin_popcount(shortfall->short_of);
}
