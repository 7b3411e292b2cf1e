/* A one-time token that lets another machine join as an agent
 * (docs/adr/0055). A user asks for it for a machine of theirs; only the
 * SHA-256 of its secret is kept, and it fixes the machine's owner and
 * region, whatever the machine later says. Used at most once, before it
 * expires; then it names the machine it made. */
#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

/* Long enough to copy a command to another machine and run it. */
#define EINSORA_ENROLMENT_LIFETIME_US (G_GINT64_CONSTANT(3600) * G_USEC_PER_SEC)

typedef struct {
    gchar *id;
    gchar *tenant_id; /* the machine's owner */
    gchar *hash;      /* lowercase hex SHA-256 of the secret */
    gchar *name;      /* (nullable) the machine's name; NULL: made from its ID */
    gchar *region;
    gchar *created_by; /* the actor's subject */
    gchar *created_at;
    gchar *expires_at;
    gchar *used_at;    /* NULL until used */
    gchar *machine_id; /* NULL until used */
} EinsoraEnrolment;

#define EINSORA_TYPE_ENROLMENT (einsora_enrolment_get_type())
GType einsora_enrolment_get_type(void);

EinsoraEnrolment *einsora_enrolment_new(void);
EinsoraEnrolment *einsora_enrolment_copy(const EinsoraEnrolment *enrolment);
void einsora_enrolment_free(EinsoraEnrolment *enrolment);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(EinsoraEnrolment, einsora_enrolment_free)

G_END_DECLS
