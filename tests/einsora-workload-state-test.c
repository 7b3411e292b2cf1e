#include "einsora-workload-state.h"

#define P EINSORA_WORKLOAD_STATE_PENDING
#define Q EINSORA_WORKLOAD_STATE_QUEUED
#define V EINSORA_WORKLOAD_STATE_PROVISIONING
#define R EINSORA_WORKLOAD_STATE_RUNNING
#define G EINSORA_WORKLOAD_STATE_STOPPING
#define S EINSORA_WORKLOAD_STATE_STOPPED
#define F EINSORA_WORKLOAD_STATE_FAILED
#define D EINSORA_WORKLOAD_STATE_DELETING
#define X EINSORA_WORKLOAD_STATE_DELETED

/* The lifecycle diagram of the design, edge by edge; written out here
 * independently of the table in the domain so that a change to either is
 * caught. */
static const struct {
    EinsoraWorkloadState from, to;
} diagram[] = {
    {P, Q}, {P, V}, {Q, V}, {V, R}, {V, F}, {R, G}, {V, G}, {G, S}, {R, F}, {S, P},
    {F, P}, {P, D}, {Q, D}, {V, D}, {R, D}, {G, D}, {S, D}, {F, D}, {D, X},
};

static gboolean
in_diagram(EinsoraWorkloadState from, EinsoraWorkloadState to)
{
    for (guint i = 0; i < G_N_ELEMENTS(diagram); i++) {
        if (diagram[i].from == from && diagram[i].to == to)
            return TRUE;
    }
    return FALSE;
}

static void
test_every_pair(void)
{
    guint allowed = 0;

    for (guint from = 0; from < EINSORA_WORKLOAD_STATE_COUNT; from++) {
        for (guint to = 0; to < EINSORA_WORKLOAD_STATE_COUNT; to++) {
            gboolean expected = in_diagram(from, to);
            gboolean got = einsora_workload_state_can_transition(from, to);
            if (expected != got)
                g_test_message("%s -> %s: expected %d, got %d",
                               einsora_workload_state_to_string(from),
                               einsora_workload_state_to_string(to), expected, got);
            g_assert_cmpint(got, ==, expected);
            allowed += got;
        }
    }
    g_assert_cmpuint(allowed, ==, G_N_ELEMENTS(diagram));
}

static void
test_out_of_range(void)
{
    g_assert_false(einsora_workload_state_can_transition(P, (EinsoraWorkloadState)99));
    g_assert_false(einsora_workload_state_can_transition((EinsoraWorkloadState)-1, P));
    g_assert_false(einsora_workload_state_holds_quota((EinsoraWorkloadState)42));
    g_assert_null(einsora_workload_state_to_string((EinsoraWorkloadState)9));
}

static void
test_properties(void)
{
    static const struct {
        EinsoraWorkloadState state;
        gboolean quota, capacity, metered, can_note;
    } table[] = {
        {P, TRUE, FALSE, FALSE, TRUE},   {Q, TRUE, FALSE, FALSE, TRUE},
        {V, TRUE, TRUE, FALSE, TRUE},    {R, TRUE, TRUE, TRUE, TRUE},
        {G, TRUE, TRUE, FALSE, TRUE},    {S, FALSE, FALSE, FALSE, TRUE},
        {F, FALSE, FALSE, FALSE, TRUE},  {D, FALSE, TRUE, FALSE, TRUE},
        {X, FALSE, FALSE, FALSE, FALSE},
    };

    g_assert_cmpuint(G_N_ELEMENTS(table), ==, EINSORA_WORKLOAD_STATE_COUNT);
    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        g_test_message("%s", einsora_workload_state_to_string(table[i].state));
        g_assert_cmpint(einsora_workload_state_holds_quota(table[i].state), ==, table[i].quota);
        g_assert_cmpint(einsora_workload_state_holds_capacity(table[i].state), ==,
                        table[i].capacity);
        g_assert_cmpint(einsora_workload_state_metered(table[i].state), ==, table[i].metered);
        g_assert_cmpint(einsora_workload_state_can_note(table[i].state), ==, table[i].can_note);
    }
}

static void
test_names_round_trip(void)
{
    static const char *const states[] = {"pending", "queued", "provisioning", "running", "stopping",
                                         "stopped", "failed", "deleting",     "deleted"};
    static const char *const kinds[] = {"notebook", "endpoint", "vm"};

    for (guint i = 0; i < G_N_ELEMENTS(states); i++) {
        EinsoraWorkloadState state;
        g_assert_true(einsora_workload_state_from_string(states[i], &state));
        g_assert_cmpuint(state, ==, i);
        g_assert_cmpstr(einsora_workload_state_to_string(state), ==, states[i]);
    }
    for (guint i = 0; i < G_N_ELEMENTS(kinds); i++) {
        EinsoraWorkloadKind kind;
        g_assert_true(einsora_workload_kind_from_string(kinds[i], &kind));
        g_assert_cmpstr(einsora_workload_kind_to_string(kind), ==, kinds[i]);
    }
    {
        EinsoraWorkloadState state = P;
        EinsoraWorkloadKind kind = EINSORA_WORKLOAD_KIND_VM;
        g_assert_false(einsora_workload_state_from_string("Running", &state));
        g_assert_false(einsora_workload_state_from_string("", &state));
        g_assert_false(einsora_workload_state_from_string(NULL, &state));
        g_assert_false(einsora_workload_kind_from_string("container", &kind));
        g_assert_cmpint(state, ==, P);
        g_assert_cmpint(kind, ==, EINSORA_WORKLOAD_KIND_VM);
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/workload-state/transitions/every-pair-matches-diagram", test_every_pair);
    g_test_add_func("/workload-state/transitions/out-of-range-refused", test_out_of_range);
    g_test_add_func("/workload-state/properties/quota-capacity-metered", test_properties);
    g_test_add_func("/workload-state/names/round-trip", test_names_round_trip);
    return g_test_run();
}
