use super::*;
use pretty_assertions::assert_eq;

type Log = Arc<Mutex<Vec<Vec<&'static str>>>>;

fn recorder() -> (Log, Flush<&'static str>) {
    let log: Log = Arc::default();
    let sink = log.clone();
    let flush: Flush<&'static str> = Arc::new(move |items| sink.lock().unwrap_or_else(|e| e.into_inner()).push(items));
    (log, flush)
}

fn seen(log: &Log) -> Vec<Vec<&'static str>> {
    log.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

async fn advance(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

fn message(group: Option<&str>, text: &str, with_media: bool) -> Merge {
    let m = InMessage {
        media_group_id: group.map(str::to_owned),
        media: with_media.then(|| {
            Box::new(crate::telegram::inbound::update::InMedia {
                kind: crate::telegram::inbound::update::MediaKind::Photo,
                file_id: "f".into(),
                file_size: None,
                file_name: None,
                mime_type: None,
                duration: None,
            })
        }),
        ..Default::default()
    };
    classify(&m, text)
}

#[test]
fn classification_holds_only_albums_and_long_texts() {
    assert_eq!(message(Some("g1"), "", true), Merge::Album("g1".into()));
    assert_eq!(message(None, "", true), Merge::Alone);
    assert_eq!(message(None, "hello", false), Merge::Text);
    assert_eq!(message(None, &"x".repeat(3999), false), Merge::Text);
    assert_eq!(message(None, &"x".repeat(4000), false), Merge::LongText);
    // UTF-16 units, as Telegram counts: 2000 emoji are 4000 units.
    assert_eq!(message(None, &"😀".repeat(2000), false), Merge::LongText);
}

#[tokio::test(start_paused = true)]
async fn a_short_text_goes_straight_through() {
    let buffer = Buffer::new(HOLD);
    let (log, flush) = recorder();
    buffer.offer(1, Merge::Text, "hi", flush.clone());
    buffer.offer(1, Merge::Alone, "photo", flush);
    assert_eq!(seen(&log), vec![vec!["hi"], vec!["photo"]]);
}

#[tokio::test(start_paused = true)]
async fn album_parts_wait_for_each_other_and_the_timer_restarts() {
    let buffer = Buffer::new(HOLD);
    let (log, flush) = recorder();
    let album = || Merge::Album("g".into());
    buffer.offer(1, album(), "p1", flush.clone());
    advance(800).await;
    buffer.offer(1, album(), "p2", flush.clone());
    advance(800).await;
    buffer.offer(1, album(), "p3", flush.clone());
    advance(900).await;
    assert!(seen(&log).is_empty(), "held less than the hold after the last part");
    advance(200).await;
    assert_eq!(seen(&log), vec![vec!["p1", "p2", "p3"]]);
}

#[tokio::test(start_paused = true)]
async fn a_split_paste_is_one_group_and_what_follows_keeps_its_order() {
    let buffer = Buffer::new(HOLD);
    let (log, flush) = recorder();
    buffer.offer(1, Merge::LongText, "first 4090", flush.clone());
    advance(300).await;
    buffer.offer(1, Merge::Text, "last 500", flush.clone());
    advance(100).await;
    // A photo from the same sender ends the paste: both go, in order, without waiting.
    buffer.offer(1, Merge::Alone, "photo", flush.clone());
    assert_eq!(seen(&log), vec![vec!["first 4090", "last 500"], vec!["photo"]]);
    advance(2000).await;
    assert_eq!(seen(&log).len(), 2, "the paste's timer found nothing left");
}

#[tokio::test(start_paused = true)]
async fn senders_and_albums_do_not_mix() {
    let buffer = Buffer::new(HOLD);
    let (log, flush) = recorder();
    buffer.offer(1, Merge::Album("a".into()), "a1", flush.clone());
    buffer.offer(2, Merge::Text, "other sender", flush.clone());
    buffer.offer(1, Merge::Album("b".into()), "b1", flush.clone());
    assert_eq!(seen(&log), vec![vec!["other sender"], vec!["a1"]]);
    advance(1100).await;
    assert_eq!(seen(&log), vec![vec!["other sender"], vec!["a1"], vec!["b1"]]);
}

#[tokio::test(start_paused = true)]
async fn tickets_go_in_the_order_they_were_taken() {
    let turnstile = Turnstile::default();
    let order: Arc<Mutex<Vec<u32>>> = Arc::default();
    let mut tasks = Vec::new();
    for (n, delay) in [(1u32, 300u64), (2, 0), (3, 100)] {
        let mut ticket = turnstile.ticket();
        let order = order.clone();
        tasks.push(tokio::spawn(async move {
            advance(delay).await;
            ticket.wait().await;
            order.lock().unwrap_or_else(|e| e.into_inner()).push(n);
        }));
    }
    // A ticket dropped without waiting still lets the next go only after the earlier ones.
    let dropped = turnstile.ticket();
    let mut last = turnstile.ticket();
    drop(dropped);
    let order2 = order.clone();
    tasks.push(tokio::spawn(async move {
        last.wait().await;
        order2.lock().unwrap_or_else(|e| e.into_inner()).push(5);
    }));
    for t in tasks {
        let _ = t.await;
    }
    assert_eq!(*order.lock().unwrap_or_else(|e| e.into_inner()), vec![1, 2, 3, 5]);
}

#[tokio::test(start_paused = true)]
async fn release_hands_a_held_group_on_at_once() {
    let buffer = Buffer::new(HOLD);
    let (log, flush) = recorder();
    buffer.offer(1, Merge::LongText, "part 1", flush.clone());
    buffer.offer(2, Merge::LongText, "other sender", flush);
    assert!(seen(&log).is_empty());
    buffer.release(1);
    assert_eq!(seen(&log), vec![vec!["part 1"]]);
    // Nothing held: nothing happens; the timer of the released group finds nothing.
    buffer.release(1);
    advance(HOLD.as_millis() as u64 + 10).await;
    assert_eq!(seen(&log), vec![vec!["part 1"], vec!["other sender"]]);
}
