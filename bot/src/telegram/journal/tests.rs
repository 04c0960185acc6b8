use super::*;
use serde_json::json;

#[test]
fn accepted_updates_survive_and_repeats_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let (j, unfinished) = Journal::open(dir.path()).unwrap();
    assert!(unfinished.is_empty() && j.last_id().is_none());
    let (fresh, _) = j
        .accept(vec![(1, json!({"update_id": 1})), (2, json!({"update_id": 2}))])
        .unwrap();
    assert_eq!(fresh.len(), 2);
    assert!(j.accept(vec![(2, json!({"update_id": 2}))]).unwrap().0.is_empty());
    j.mark(1, Progress::Started);
    j.mark(1, Progress::Done);
    j.mark(2, Progress::Started);
    j.mark(2, Progress::Tool);
    drop(j);
    // A torn line at the end is skipped.
    let mut f = OpenOptions::new()
        .append(true)
        .open(dir.path().join("inbound.jsonl"))
        .unwrap();
    f.write_all(b"{\"t\":\"update\",\"id\":3,\"upd").unwrap();
    drop(f);
    let (j, unfinished) = Journal::open(dir.path()).unwrap();
    assert_eq!(j.last_id(), Some(2));
    assert_eq!(unfinished.len(), 1);
    assert_eq!((unfinished[0].id, unfinished[0].progress), (2, Progress::Tool));
    // The rewrite kept the highest id even after everything is done.
    j.mark(2, Progress::Done);
    drop(j);
    let (j, unfinished) = Journal::open(dir.path()).unwrap();
    assert!(unfinished.is_empty());
    assert_eq!(j.last_id(), Some(2));
}

#[test]
fn a_repeat_inside_one_batch_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let (j, _) = Journal::open(dir.path()).unwrap();
    let (fresh, _) = j
        .accept(vec![(4, json!({"update_id": 4})), (4, json!({"update_id": 4}))])
        .unwrap();
    assert_eq!(fresh.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_are_written_at_once_and_synced_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let (j, _) = Journal::open(dir.path()).unwrap();
    let (fresh, durable) = j.accept(vec![(7, json!({"update_id": 7}))]).unwrap();
    assert_eq!(fresh.len(), 1);
    // In the file before any sync was waited for: a killed process keeps it.
    let text = std::fs::read_to_string(dir.path().join("inbound.jsonl")).unwrap();
    assert!(text.contains("\"id\":7"), "{text}");
    j.durable(durable).await;
    assert!(j.sync.lock().synced >= 1);
    for n in 0..50 {
        j.mark(7, if n % 2 == 0 { Progress::Started } else { Progress::Done });
    }
    j.barrier().await;
    let (synced, written) = {
        let st = j.sync.lock();
        (st.synced, st.written)
    };
    assert_eq!((synced, written), (51, 51));
    // A tool mark is durable when `mark` returns.
    j.mark(7, Progress::Tool);
    assert_eq!(j.sync.lock().synced, 52);
    // Nothing to wait for: repeats only.
    let (fresh, durable) = j.accept(vec![(7, json!({"update_id": 7}))]).unwrap();
    assert!(fresh.is_empty());
    j.durable(durable).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_what_must_be_durable_soon_wakes_the_sync_thread() {
    let dir = tempfile::tempdir().unwrap();
    let (j, _) = Journal::open(dir.path()).unwrap();
    let (_, durable) = j.accept(vec![(8, json!({"update_id": 8}))]).unwrap();
    j.mark(8, Progress::Started);
    // Neither the accepted update (until it is handed over and waited for) nor a `started`
    // mark asks for a sync; give a woken thread time to show.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let (synced, requested) = {
        let st = j.sync.lock();
        (st.synced, st.requested)
    };
    assert_eq!((synced, requested), (0, 0));
    j.durable(durable).await;
    assert!(j.sync.lock().synced >= 1);
    // `done` is synced without anyone waiting.
    j.mark(8, Progress::Done);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while j.sync.lock().synced < 3 {
        assert!(std::time::Instant::now() < deadline, "the done mark was never synced");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}
