//! Integration tests of the agent runtime against an in-process faux provider.

mod compaction_tests;
mod dispatch_tests;
mod events_tests;
mod failover_tests;
mod loop_tests;
mod provider_tools_tests;
mod resume_tests;
mod skills_tests;
mod spend_tests;
mod submit_tests;
mod support;
