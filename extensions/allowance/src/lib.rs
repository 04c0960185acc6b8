//! Spending allowances: how much each chat, person and A2A caller spent on model requests, per
//! local day, kept so that the counts survive a crash exactly, and checked against caps before a
//! request is made.
//!
//! # Model
//!
//! A model request pays from one or more [`Account`]s (a group message: the chat and its sender;
//! an A2A task: the caller). Before the request, the host [`reserve`](SpendStore::reserve)s its
//! estimated cost ([`Charge`]) against the [`Cap`]s that apply; the store admits it only when,
//! for every cap, what the cap's window counts (settled spend plus open reservations) plus the
//! estimate stays within the limit. Check and hold are one step under one lock, so two
//! concurrent requests cannot both pass for the last cent. After the response the host
//! [`settle`](SpendStore::settle)s what the provider reported, which replaces the hold.
//!
//! Amounts are [`MicroUsd`] (integers: sums are exact). Days and months are the chat's: the
//! caller passes the local date ([`local_day`]); [`resets_at`] says when a window ends.
//!
//! # Files and the crash rule
//!
//! The store owns one folder: `journal-<n>.jsonl` (append-only, one JSON line per record) and
//! `snapshot.json` (the folded state, naming the first journal not in it).
//!
//! - A `reserve` line is written before the request is made, a `settle` line (the request's
//!   idempotency key and its cost) after it. Replaying lines is idempotent: a key is held once
//!   and settled once, so a replay after `kill -9` never counts a request twice.
//! - **A hold is durable against `kill -9` when [`reserve`](SpendStore::reserve) returns**: its
//!   line is written (`write(2)` into the system's page cache, which outlives the process)
//!   under the store's lock, together with the check, before the request goes out. **Against
//!   power loss it is durable once the next sync ends**: the store's sync thread syncs every
//!   line written so far shortly after it is written (after gathering lines for
//!   [`SYNC_GATHER`], 10 ms, so that a request's two lines and other chats' lines meanwhile
//!   share one sync), with the lock released, so writes go on meanwhile and no request waits
//!   for the disk. A power cut in that window may lose the hold of a request that
//!   was made (counted low by its estimate): the one case the rule gives up, to keep the disk
//!   off the request's path.
//! - **A settlement is durable as a hold is**: [`settle`](SpendStore::settle) writes its line
//!   and replaces the hold in memory at once (the next check counts the cost, not the
//!   estimate); the sync thread makes it durable against power loss right after, and
//!   [`flush`](SpendStore::flush) waits for that (a host stopping). A power cut in that window
//!   may lose the settlement: its request then counts at its estimate, which bounds the
//!   reported cost from above (high, never low), except where a provider reports more than the
//!   estimate (counted low by the difference). Nothing waits for the disk after the answer
//!   either.
//! - A request cut off by a crash between its two lines is counted at its estimate when the
//!   store opens again (it may have been made, and the estimate bounds it from above): the
//!   cap's side of a crash is the safe side.
//! - A failed write is cut back off the journal and refuses its request. A failed sync breaks
//!   the store ([`StoreError::Broken`]): every later hold is refused (the host refuses the
//!   request), holds made before stay counted, and the sync is not tried again (the system may
//!   have dropped the unsynced lines; a second sync could report success over them). A restart
//!   replays what is on disk.
//! - A torn tail is cut off the file: a last line without its newline (the write was cut off),
//!   or everything from a line holding zero bytes (a power cut during a sync can leave a page of
//!   lines written meanwhile unwritten under later ones; no sync that ended covered any of
//!   them). Any other damage refuses to open ([`StoreError::Damaged`]) rather than guess.
//! - After [`COMPACT_AFTER`] lines the journal is folded into a new snapshot: a new empty
//!   journal is created, writes move to it (the only step under the store's lock, with a copy of
//!   the ledger), then the snapshot of that copy is written aside, synced and renamed and the old
//!   journal removed. Every crash point leaves the old snapshot with every journal since, or the
//!   new one with the journals after it. Lines written but not yet synced fold in too (their
//!   holds and settlements are in the snapshot, which is synced before it replaces the old
//!   pair); when the snapshot cannot be written, the old journal is synced instead.
//!   Snapshots keep the last [`KEEP_DAYS`] days of daily totals and the month totals of those
//!   months, so the files do not grow without bound.
//!
//! Why a journal with holds rather than writing only the settled cost: a crash between the
//! request and its record would lose the cost, and after a restart more requests than fit would
//! pass. The price is two written lines per request (microseconds each) and syncs shortly
//! after them, each shared by every line written meanwhile; the check itself is in memory
//! (see the `check` bench), and reads never wait for a sync.
//!
//! # For `/usage`
//!
//! - [`SpendStore::open_read_only`]: the store read beside the bot that writes it (the
//!   console's `/usage`): nothing is created, cut or folded; writes fail with
//!   [`StoreError::ReadOnly`];
//! - [`SpendStore::daily`]: an account's settled spend per local day over a date range (a chart
//!   of the last 30 days: `daily(&Account::Chat(key), today - 29 days, today)`);
//! - [`SpendStore::settled`] / [`SpendStore::counted`]: one account's spend in a [`Period`]
//!   (today: `Period::Day(today)`, this month: `Period::month_of(today)`); `counted` adds open
//!   holds;
//! - [`SpendStore::top`]: the top N accounts of a kind ([`AccountKind::Chat`],
//!   [`AccountKind::User`]) by settled spend in a period.
//!
//! ```
//! use volcanic_allowance::{Account, Cap, Charge, Decision, MicroUsd, SpendStore, Window};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let store = SpendStore::open(dir.path())?;
//! let day = chrono::NaiveDate::from_ymd_opt(2026, 12, 6).ok_or("date")?;
//! let chat = Account::Chat("42".into());
//! let cap = Cap { account: chat.clone(), window: Window::Daily, limit: MicroUsd::from_usd(1.0) };
//! let charge = Charge { request: "s1:1".into(), day, accounts: vec![chat.clone()], estimate: MicroUsd::from_usd(0.6) };
//! assert_eq!(store.reserve(&charge, &[cap.clone()])?, Decision::Admitted);
//! store.settle("s1:1", MicroUsd::from_usd(0.5))?;
//! let second = Charge { request: "s1:2".into(), ..charge };
//! assert!(matches!(store.reserve(&second, &[cap])?, Decision::Refused(_)));
//! assert_eq!(store.daily(&chat, day, day), vec![(day, MicroUsd::from_usd(0.5))]);
//! # Ok(()) }
//! ```

mod account;
mod check;
mod ledger;
mod money;
mod store;
mod zone;

pub use account::{Account, AccountKind, BadAccount, Period};
pub use check::{Cap, Charge, Decision, Refusal, Window};
pub use money::MicroUsd;
pub use store::{COMPACT_AFTER, KEEP_DAYS, Result, SYNC_GATHER, SpendStore, StoreError, SyncJournal};
pub use zone::{local_day, resets_at};
