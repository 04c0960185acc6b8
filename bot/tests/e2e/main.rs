//! End-to-end tests of the real `volcanic-bot` binary against the test kit's doubles.

mod compaction;
mod console;
mod deploy;
mod doctor;
mod exactly_once;
mod features;
mod flood;
mod kinds;
mod poison;
mod questions;
mod scheduler;
mod secrets;
mod service;
mod service_start;
mod strangers;
mod support;
mod telegram;
mod telegram_calendar;
mod telegram_compact;
mod telegram_failures;
mod telegram_media;
mod telegram_more;
mod telegram_order;
mod telegram_slots;
mod telegram_ui;
mod telegram_webhook;
