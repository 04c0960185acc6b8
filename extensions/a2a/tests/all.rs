//! Integration tests of volcanic-a2a against the testkit's scripted A2A peer, in its three
//! modes (1.0 only, 1.0 with 0.3, 0.3 only).

mod suite;
