//! Google Calendar for Volcanic chats (work in progress): per-chat OAuth connections and the
//! `calendar` tool, on `google-calendar3` (Calendar API v3) and `yup-oauth2` (token refresh),
//! both on rustls with the ring provider.

pub use google_calendar3;
pub use yup_oauth2;
