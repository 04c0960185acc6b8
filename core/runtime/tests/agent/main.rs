//! Integration tests of the agent runtime against an in-process faux provider.

mod loop_tests;
mod support;
