//! End-to-end tests of the real `volcanic-bot` binary against the test kit's doubles.

mod console;
mod support;
mod telegram;
