//! Serves `volcanic-a2a-server` with the scripted executor (the A2A TCK's behaviours) on
//! `127.0.0.1`, for the TCK and the Python `a2a-sdk` tests.
//!
//! `a2a-tck-server [--port N] [--state DIR] [--caller NAME=TOKEN]... [--anonymous NAME]
//! [--allow-loopback-push] [--strict-card] [--max-concurrent N]`; prints `listening on http://127.0.0.1:PORT` once bound.

use std::net::SocketAddr;
use std::path::PathBuf;

use volcanic_a2a_server::{Caller, ServerConfig};

fn usage(why: &str) -> ! {
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!(
            "{why}\nusage: a2a-tck-server [--port N] [--state DIR] [--caller NAME=TOKEN]... [--anonymous NAME] [--allow-loopback-push] [--strict-card] [--max-concurrent N]\n"
        )
        .as_bytes(),
    );
    std::process::exit(2)
}

#[tokio::main]
async fn main() {
    let mut config = ServerConfig::default();
    let mut port = 0u16;
    let mut anonymous = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage(&format!("{a} needs a value")));
        match a.as_str() {
            "--port" => port = value().parse().unwrap_or_else(|_| usage("--port takes a number")),
            "--state" => config.state_dir = Some(PathBuf::from(value())),
            "--caller" => {
                let v = value();
                let (name, token) = v.split_once('=').unwrap_or_else(|| usage("--caller takes NAME=TOKEN"));
                config.callers.push(Caller {
                    name: name.to_owned(),
                    token: token.to_owned(),
                });
            }
            "--anonymous" => anonymous = Some(value()),
            "--allow-loopback-push" => config.allow_loopback_push = true,
            // The TCK checks the card against the 1.0 schema, which allows no 0.3 fields.
            "--strict-card" => config.card.strict = true,
            "--max-concurrent" => {
                config.limits.max_concurrent_tasks = value()
                    .parse()
                    .unwrap_or_else(|_| usage("--max-concurrent takes a number"))
            }
            other => usage(&format!("unknown argument {other}")),
        }
    }
    config.card.name = "Volcanic TCK SUT".into();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let result = volcanic_testkit::a2a_server::serve(config, anonymous, addr, |local| {
        let _ = std::io::Write::write_all(
            &mut std::io::stdout(),
            format!("listening on http://{local}\n").as_bytes(),
        );
    })
    .await;
    if let Err(e) = result {
        usage(&e);
    }
}
