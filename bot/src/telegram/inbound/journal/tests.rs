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

#[test]
fn junk_anywhere_is_copied_aside_and_every_readable_record_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inbound.jsonl");
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"{\"t\":\"update\",\"id\":1,\"update\":{\"update_id\":1}}\n");
    bytes.extend_from_slice(b"\xff\xfe garbage \xc3\x28\n");
    bytes.extend_from_slice(b"{\"t\":\"update\",\"id\":2,\"update\":{\"update_id\":2}}\n");
    bytes.extend_from_slice(b"{\"t\":\"state\",\"id\":2,\"s\":\"sta\n");
    bytes.extend_from_slice(b"{\"t\":\"state\",\"id\":1,\"s\":\"done\"}\n");
    std::fs::write(&path, &bytes).unwrap();
    let (j, unfinished) = Journal::open(dir.path()).unwrap();
    let ids: Vec<(i64, Progress)> = unfinished.iter().map(|u| (u.id, u.progress)).collect();
    assert_eq!(ids, vec![(2, Progress::Accepted)]);
    assert_eq!(j.last_id(), Some(2));
    let aside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("inbound.jsonl.corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1, "one copy set aside");
    assert_eq!(
        std::fs::read(aside[0].path()).unwrap(),
        bytes,
        "the copy is the file as it was"
    );
    // The rewritten journal reads cleanly: no second copy at the next start.
    drop(j);
    let (_, unfinished) = Journal::open(dir.path()).unwrap();
    assert_eq!(unfinished.len(), 1);
    let copies = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".corrupt-"))
        .count();
    assert_eq!(copies, 1);
}

#[test]
fn per_message_progress_survives_the_rewrite() {
    let dir = tempfile::tempdir().unwrap();
    let (j, _) = Journal::open(dir.path()).unwrap();
    let batch = (1..=4).map(|id| (id, json!({"update_id": id}))).collect();
    let _ = j.accept(batch).unwrap();
    j.started(&[1, 2], "d12");
    j.mark(1, Progress::Tool);
    j.chunk(&vec![1].into(), 0, ChunkState::Sending);
    j.chunk(&vec![1].into(), 0, ChunkState::Sent);
    j.chunk(&vec![1].into(), 1, ChunkState::Sending);
    j.chunk(&vec![2].into(), 0, ChunkState::Sending);
    j.chunk(&vec![2].into(), 0, ChunkState::Refused);
    j.started(&[3], "d3");
    j.mark(3, Progress::Retried);
    j.started(&[3], "d3b");
    j.mark(4, Progress::Retried);
    drop(j);
    for _ in 0..2 {
        // Read, rewritten, read again: the same.
        let (j, unfinished) = Journal::open(dir.path()).unwrap();
        let got: Vec<_> = unfinished
            .iter()
            .map(|u| (u.id, u.progress, u.prompt.clone(), u.chunks.resume_at(), u.retries))
            .collect();
        assert_eq!(
            got,
            vec![
                // Chunk 1 was on the wire: not sent again; chunk 0 of 2 was refused: sent again.
                (1, Progress::Tool, Some("d12".into()), 2, 0),
                (2, Progress::Started, Some("d12".into()), 0, 0),
                (3, Progress::Retried, Some("d3b".into()), 0, 1),
                (4, Progress::Retried, None, 0, 1),
            ]
        );
        drop(j);
    }
}

#[test]
fn a_line_delivery_is_remembered_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let (j, _) = Journal::open(dir.path()).unwrap();
    let delivery = Answering::delivery(prompt_digest("[Scheduled job ab12 · slot 09:00"));
    let other = Answering::delivery(prompt_digest("[Scheduled job cd34 · slot 09:00"));
    j.chunk(&delivery, 0, ChunkState::Sending);
    j.chunk(&delivery, 0, ChunkState::Sent);
    j.chunk(&delivery, 1, ChunkState::Sending);
    j.chunk(&other, 0, ChunkState::Sent);
    j.finish(&other);
    drop(j);
    let (j, unfinished) = Journal::open(dir.path()).unwrap();
    assert!(unfinished.is_empty(), "a delivery is no update");
    // Chunk 1 was on the wire: delivery goes on after it. The finished one sends nothing.
    assert_eq!(j.delivery_resume_at(&delivery.deliveries[0]), Some(2));
    assert_eq!(j.delivery_resume_at(&other.deliveries[0]), None);
    assert_eq!(j.delivery_resume_at("never-seen"), Some(0));
    drop(j);
    // Kept by the rewrite, finished or not.
    let (j, _) = Journal::open(dir.path()).unwrap();
    assert_eq!(j.delivery_resume_at(&delivery.deliveries[0]), Some(2));
    assert_eq!(j.delivery_resume_at(&other.deliveries[0]), None);
    j.finish(&delivery);
    drop(j);
    let (j, _) = Journal::open(dir.path()).unwrap();
    assert_eq!(j.delivery_resume_at(&delivery.deliveries[0]), None);
    let text = std::fs::read_to_string(dir.path().join("inbound.jsonl")).unwrap();
    assert_eq!(text.matches("\"slot\"").count(), 2, "one done line each: {text}");
}

#[test]
fn chunks_sent_early_before_a_tool_call_are_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let (j, _) = Journal::open(dir.path()).unwrap();
    let _ = j.accept(vec![(5, json!({"update_id": 5}))]).unwrap();
    j.started(&[5], "d5");
    let of: Answering = vec![5].into();
    // Two chunks of text written before a tool call went out early.
    for n in 0..2 {
        j.chunk(&of, n, ChunkState::Sending);
        j.chunk(&of, n, ChunkState::Sent);
    }
    j.drop_early(&[5]);
    j.mark(5, Progress::Tool);
    // The final answer's first chunk was on its way when the process died.
    j.chunk(&of, 0, ChunkState::Sending);
    drop(j);
    for _ in 0..2 {
        let (j, unfinished) = Journal::open(dir.path()).unwrap();
        let u = &unfinished[0];
        // The final goes on after its own chunk 0, not after the early chunks' marks.
        assert_eq!((u.chunks.resume_at(), u.chunks.rest), (1, None));
        drop(j);
    }
}

#[test]
fn the_rest_after_chunks_sent_early_is_cut_the_same_way_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (j, _) = Journal::open(dir.path()).unwrap();
    let _ = j.accept(vec![(6, json!({"update_id": 6}))]).unwrap();
    j.started(&[6], "d6");
    let of: Answering = vec![6].into();
    j.chunk(&of, 0, ChunkState::Sent);
    j.chunk(&of, 1, ChunkState::Sent);
    j.rest(&[6], Rest { first: 2, at: 7 });
    j.chunk(&of, 2, ChunkState::Sent);
    drop(j);
    let answer = "early. the rest";
    for _ in 0..2 {
        // Read, rewritten, read again: the same.
        let (j, unfinished) = Journal::open(dir.path()).unwrap();
        let u = &unfinished[0];
        assert_eq!(u.chunks.rest, Some(Rest { first: 2, at: 7 }));
        assert_eq!(u.chunks.resume_at(), 3);
        assert_eq!(u.chunks.layout(answer), ("the rest", 2));
        drop(j);
    }
    // An offset that is not in the text (not a character boundary, past its end): the whole.
    let odd = Chunks {
        rest: Some(Rest { first: 1, at: 99 }),
        ..Chunks::default()
    };
    assert_eq!(odd.layout(answer), (answer, 0));
}
