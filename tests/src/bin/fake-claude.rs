//! The fake `claude` executable; see `volcanic_testkit::fake_claude`.

fn main() {
    std::process::exit(volcanic_testkit::fake_claude::main());
}
