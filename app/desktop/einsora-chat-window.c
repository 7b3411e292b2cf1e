#define G_LOG_DOMAIN "einsora-app"

#include "einsora-chat-window.h"

#include <glib/gi18n.h>
#include <json-glib/json-glib.h>
#include <string.h>

#include "einsora-endpoint-chat.h"

struct _EinsoraChatWindow {
    AdwApplicationWindow parent_instance;
    AdwToastOverlay *toasts;
    AdwWindowTitle *title;
    GtkScrolledWindow *scroller;
    GtkBox *transcript;
    GtkWidget *empty_page;
    GtkEntry *entry;
    GtkWidget *send_button;
    GtkWidget *stop_button;
    gchar *workload_id;
    gchar *base_url;
    gchar *token;
    SoupSession *session;
    /* What was said and answered, oldest first: each request sends it
     * whole, since the endpoint remembers nothing. */
    JsonArray *conversation;
    /* The answer coming, while one is (NULL otherwise). */
    GCancellable *cancellable;
    gchar *question;
    GtkLabel *answer_label;
    GString *answer;
    gchar *error;
};

G_DEFINE_FINAL_TYPE(EinsoraChatWindow, einsora_chat_window, ADW_TYPE_APPLICATION_WINDOW)

static void
show_answering(EinsoraChatWindow *self)
{
    gboolean answering = self->cancellable != NULL;

    gtk_widget_set_visible(self->send_button, !answering);
    gtk_widget_set_visible(self->stop_button, answering);
    gtk_widget_action_set_enabled(GTK_WIDGET(self), "chat.send", !answering);
    gtk_widget_action_set_enabled(GTK_WIDGET(self), "chat.stop", answering);
}

static GtkLabel *
add_line(EinsoraChatWindow *self, const char *text, const char *style, GtkAlign align)
{
    GtkWidget *label = gtk_label_new(text);

    gtk_label_set_wrap(GTK_LABEL(label), TRUE);
    gtk_label_set_wrap_mode(GTK_LABEL(label), PANGO_WRAP_WORD_CHAR);
    gtk_label_set_selectable(GTK_LABEL(label), TRUE);
    gtk_label_set_xalign(GTK_LABEL(label), 0);
    gtk_widget_set_halign(label, align);
    gtk_widget_add_css_class(label, style);
    gtk_widget_set_visible(self->empty_page, FALSE);
    gtk_box_append(self->transcript, label);
    return GTK_LABEL(label);
}

static void
add_message(JsonArray *conversation, const char *role, const char *content)
{
    JsonObject *message = json_object_new();

    json_object_set_string_member(message, "role", role);
    json_object_set_string_member(message, "content", content);
    json_array_add_object_element(conversation, message);
}

/* Never called after a Stop or the window's end (the client's promise). */
static void
on_piece(const char *text, gpointer user_data)
{
    EinsoraChatWindow *self = user_data;

    g_string_append(self->answer, text);
    gtk_label_set_text(self->answer_label, self->answer->str);
}

static void
on_answered(GObject *source, GAsyncResult *result, gpointer user_data)
{
    g_autoptr(EinsoraChatWindow) self = user_data;
    g_autoptr(GError) error = NULL;
    g_autofree gchar *question = g_steal_pointer(&self->question);
    gboolean answered = einsora_endpoint_chat_finish(result, NULL, &error);
    gboolean stopped = g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);

    g_clear_object(&self->cancellable);
    if (self->transcript == NULL)
        return; /* the window is gone */
    /* A stopped answer stays as far as it came: the user saw it, and the
     * next question may build on it. A failed one is left out. */
    if (answered || (stopped && self->answer->len > 0)) {
        add_message(self->conversation, "user", question);
        add_message(self->conversation, "assistant", self->answer->str);
    }
    if (self->answer->len == 0 && stopped)
        gtk_label_set_text(self->answer_label, _("(stopped)"));
    else if (self->answer->len == 0)
        gtk_widget_set_visible(GTK_WIDGET(self->answer_label), FALSE);
    if (!answered && !stopped) {
        g_free(self->error);
        self->error = g_strdup(error->message);
        add_line(self, self->error, "einsora-chat-error", GTK_ALIGN_START);
        adw_toast_overlay_add_toast(self->toasts, adw_toast_new(_("The endpoint didn't answer")));
    }
    show_answering(self);
    gtk_widget_grab_focus(GTK_WIDGET(self->entry));
}

gboolean
einsora_chat_window_send(EinsoraChatWindow *self, const char *text)
{
    g_autoptr(JsonArray) messages = NULL;
    g_autofree gchar *question = g_strstrip(g_strdup(text != NULL ? text : ""));

    g_return_val_if_fail(EINSORA_IS_CHAT_WINDOW(self), FALSE);
    if (self->cancellable != NULL || *question == '\0')
        return FALSE;
    messages = json_array_sized_new(json_array_get_length(self->conversation) + 1);
    for (guint i = 0; i < json_array_get_length(self->conversation); i++)
        json_array_add_element(messages,
                               json_node_copy(json_array_get_element(self->conversation, i)));
    add_message(messages, "user", question);
    add_line(self, question, "einsora-chat-user", GTK_ALIGN_END);
    self->answer_label = add_line(self, "…", "einsora-chat-answer", GTK_ALIGN_START);
    g_string_truncate(self->answer, 0);
    g_clear_pointer(&self->error, g_free);
    self->question = g_steal_pointer(&question);
    self->cancellable = g_cancellable_new();
    show_answering(self);
    einsora_endpoint_chat_async(self->session, self->base_url, self->token, NULL, messages,
                                on_piece, self, self->cancellable, on_answered, g_object_ref(self));
    return TRUE;
}

void
einsora_chat_window_stop(EinsoraChatWindow *self)
{
    if (self->cancellable != NULL)
        g_cancellable_cancel(self->cancellable);
}

static void
on_send(GtkWidget *widget, const char *action, GVariant *parameter)
{
    EinsoraChatWindow *self = EINSORA_CHAT_WINDOW(widget);

    if (einsora_chat_window_send(self, gtk_editable_get_text(GTK_EDITABLE(self->entry))))
        gtk_editable_set_text(GTK_EDITABLE(self->entry), "");
}

static void
on_stop(GtkWidget *widget, const char *action, GVariant *parameter)
{
    einsora_chat_window_stop(EINSORA_CHAT_WINDOW(widget));
}

static void
on_entry_activate(GtkEntry *entry, EinsoraChatWindow *self)
{
    gtk_widget_activate_action(GTK_WIDGET(self), "chat.send", NULL);
}

/* The transcript follows the answer as it grows. */
static void
on_transcript_grew(GtkAdjustment *adjustment, GParamSpec *pspec, gpointer user_data)
{
    gtk_adjustment_set_value(adjustment, gtk_adjustment_get_upper(adjustment) -
                                             gtk_adjustment_get_page_size(adjustment));
}

static void
einsora_chat_window_dispose(GObject *object)
{
    EinsoraChatWindow *self = EINSORA_CHAT_WINDOW(object);

    einsora_chat_window_stop(self);
    self->answer_label = NULL;
    gtk_widget_dispose_template(GTK_WIDGET(self), EINSORA_TYPE_CHAT_WINDOW);
    G_OBJECT_CLASS(einsora_chat_window_parent_class)->dispose(object);
}

static void
einsora_chat_window_finalize(GObject *object)
{
    EinsoraChatWindow *self = EINSORA_CHAT_WINDOW(object);

    if (self->token != NULL)
        explicit_bzero(self->token, strlen(self->token));
    g_free(self->token);
    g_free(self->workload_id);
    g_free(self->base_url);
    g_free(self->question);
    g_free(self->error);
    g_string_free(self->answer, TRUE);
    g_clear_object(&self->cancellable);
    g_clear_object(&self->session);
    g_clear_pointer(&self->conversation, json_array_unref);
    G_OBJECT_CLASS(einsora_chat_window_parent_class)->finalize(object);
}

static void
einsora_chat_window_class_init(EinsoraChatWindowClass *klass)
{
    GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);

    G_OBJECT_CLASS(klass)->dispose = einsora_chat_window_dispose;
    G_OBJECT_CLASS(klass)->finalize = einsora_chat_window_finalize;
    gtk_widget_class_set_template_from_resource(widget_class,
                                                "/dev/einsora/Einsora/einsora-chat-window.ui");
    gtk_widget_class_bind_template_child(widget_class, EinsoraChatWindow, toasts);
    gtk_widget_class_bind_template_child(widget_class, EinsoraChatWindow, title);
    gtk_widget_class_bind_template_child(widget_class, EinsoraChatWindow, scroller);
    gtk_widget_class_bind_template_child(widget_class, EinsoraChatWindow, transcript);
    gtk_widget_class_bind_template_child(widget_class, EinsoraChatWindow, empty_page);
    gtk_widget_class_bind_template_child(widget_class, EinsoraChatWindow, entry);
    gtk_widget_class_bind_template_child(widget_class, EinsoraChatWindow, send_button);
    gtk_widget_class_bind_template_child(widget_class, EinsoraChatWindow, stop_button);
    gtk_widget_class_install_action(widget_class, "chat.send", NULL, on_send);
    gtk_widget_class_install_action(widget_class, "chat.stop", NULL, on_stop);
    gtk_widget_class_add_binding_action(widget_class, GDK_KEY_Escape, 0, "chat.stop", NULL);
    gtk_widget_class_add_binding_action(widget_class, GDK_KEY_w, GDK_CONTROL_MASK, "window.close",
                                        NULL);
}

static void
einsora_chat_window_init(EinsoraChatWindow *self)
{
    gtk_widget_init_template(GTK_WIDGET(self));
    /* No time limit: a slow model on a small class may think for long;
     * Stop is the user's limit. */
    self->session = soup_session_new_with_options("timeout", 0, NULL);
    self->conversation = json_array_new();
    self->answer = g_string_new(NULL);
    g_signal_connect(self->entry, "activate", G_CALLBACK(on_entry_activate), self);
    g_signal_connect(gtk_scrolled_window_get_vadjustment(self->scroller), "notify::upper",
                     G_CALLBACK(on_transcript_grew), NULL);
    show_answering(self);
}

EinsoraChatWindow *
einsora_chat_window_new(GtkApplication *application, const char *workload_id, const char *title,
                        const char *base_url, const char *token)
{
    EinsoraChatWindow *self =
        g_object_new(EINSORA_TYPE_CHAT_WINDOW, "application", application, "title", title, NULL);

    self->workload_id = g_strdup(workload_id);
    self->base_url = g_strdup(base_url);
    self->token = g_strdup(token);
    adw_window_title_set_title(self->title, title);
    adw_window_title_set_subtitle(self->title, base_url);
    return self;
}

const char *
einsora_chat_window_get_workload_id(EinsoraChatWindow *self)
{
    return self->workload_id;
}

gboolean
einsora_chat_window_is_answering(EinsoraChatWindow *self)
{
    return self->cancellable != NULL;
}

const char *
einsora_chat_window_get_answer(EinsoraChatWindow *self)
{
    return self->answer_label != NULL ? self->answer->str : NULL;
}

const char *
einsora_chat_window_get_error(EinsoraChatWindow *self)
{
    return self->error;
}

guint
einsora_chat_window_get_n_messages(EinsoraChatWindow *self)
{
    return json_array_get_length(self->conversation);
}
