//! Integration tests of volcanic-google-calendar against the testkit's Google double.

mod suite;
