//! Integration tests of `volcanic-anthropic`, one binary: the provider contract shared by every wire API
//! (`suite/contract.rs`) and this API's own replies against the testkit's scripted model server
//! (`suite/replies.rs`).

mod suite;
