"""The served-sparse family of the canary (`evalsuite canary --endpoint URL --retrieval sparse`): its settings,
options, per-session context, checks and the diagnosis of a sparse departure."""
