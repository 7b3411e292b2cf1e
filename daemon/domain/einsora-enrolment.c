#define G_LOG_DOMAIN "einsora-domain"

#include "einsora-enrolment.h"

G_DEFINE_BOXED_TYPE(EinsoraEnrolment, einsora_enrolment, einsora_enrolment_copy,
                    einsora_enrolment_free)

EinsoraEnrolment *
einsora_enrolment_new(void)
{
    return g_new0(EinsoraEnrolment, 1);
}

EinsoraEnrolment *
einsora_enrolment_copy(const EinsoraEnrolment *enrolment)
{
    EinsoraEnrolment *copy = g_new0(EinsoraEnrolment, 1);

    copy->id = g_strdup(enrolment->id);
    copy->tenant_id = g_strdup(enrolment->tenant_id);
    copy->hash = g_strdup(enrolment->hash);
    copy->name = g_strdup(enrolment->name);
    copy->region = g_strdup(enrolment->region);
    copy->created_by = g_strdup(enrolment->created_by);
    copy->created_at = g_strdup(enrolment->created_at);
    copy->expires_at = g_strdup(enrolment->expires_at);
    copy->used_at = g_strdup(enrolment->used_at);
    copy->machine_id = g_strdup(enrolment->machine_id);
    return copy;
}

void
einsora_enrolment_free(EinsoraEnrolment *enrolment)
{
    if (enrolment == NULL)
        return;
    g_free(enrolment->id);
    g_free(enrolment->tenant_id);
    g_free(enrolment->hash);
    g_free(enrolment->name);
    g_free(enrolment->region);
    g_free(enrolment->created_by);
    g_free(enrolment->created_at);
    g_free(enrolment->expires_at);
    g_free(enrolment->used_at);
    g_free(enrolment->machine_id);
    g_free(enrolment);
}
