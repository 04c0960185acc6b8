//! The spend store's integration tests: one binary (STYLE.md), a module per concern.

mod suite;
