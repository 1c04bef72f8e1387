//! Every screen of the viewer, drawn on ratatui's `TestBackend` and compared
//! with the committed insta snapshots (`tests/snapshots/screens__*.snap`).
//! Regenerate with `INSTA_UPDATE=always cargo test -p lockmeter-viewer
//! --test screens` and read the diff before committing it.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use lockmeter_model::metric::Metric;
use lockmeter_model::render::{SortKey, TableOptions};
use lockmeter_model::{parse_recording, parse_snapshot, Snapshot};
use lockmeter_viewer::state::picker::Entry;
use lockmeter_viewer::state::playback::frames_from;
use lockmeter_viewer::state::rows::RowId;
use lockmeter_viewer::state::{App, Feed, Frame, Origin, Overlay};
use lockmeter_viewer::view;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn mixed() -> Snapshot {
    parse_snapshot(&fixture("mixed.json")).unwrap()
}

fn dump_app() -> App {
    App::for_dump("mixed.json", mixed(), TableOptions::default())
}

fn render(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| view::draw(f, app)).unwrap();
    terminal.backend().to_string()
}

fn key(app: &mut App, code: KeyCode) {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE));
}

#[test]
fn table_of_a_dump() {
    let mut app = dump_app();
    insta::assert_snapshot!("table_dump", render(&mut app, 140, 30));
}

#[test]
fn table_expanded_into_sites_holders_and_advisories() {
    let mut app = dump_app();
    render(&mut app, 140, 36);
    app.view.selected = Some(RowId::Lock("pipe.sem.lock".into()));
    key(&mut app, KeyCode::Char('l'));
    app.view.selected = Some(RowId::Lock("bkl".into()));
    key(&mut app, KeyCode::Enter);
    key(&mut app, KeyCode::Down);
    insta::assert_snapshot!("table_expanded", render(&mut app, 140, 36));
}

#[test]
fn table_in_a_narrow_terminal_drops_columns() {
    let mut app = dump_app();
    insta::assert_snapshot!("table_narrow", render(&mut app, 80, 20));
}

#[test]
fn table_sorted_by_wait_ascending_and_filtered() {
    let mut app = dump_app();
    app.sort_by(SortKey::By(Metric::WaitMean));
    app.sort_by(SortKey::By(Metric::WaitMean));
    key(&mut app, KeyCode::Char('/'));
    for c in "pipe".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    insta::assert_snapshot!("table_filter_typing", render(&mut app, 120, 16));
}

#[test]
fn detail_pane_below_the_table() {
    let mut app = dump_app();
    render(&mut app, 140, 44);
    app.view.selected = Some(RowId::Lock("bkl".into()));
    key(&mut app, KeyCode::Tab);
    insta::assert_snapshot!("detail_split", render(&mut app, 140, 44));
}

#[test]
fn detail_pane_of_a_wait_queue_fills_a_short_terminal() {
    let mut app = dump_app();
    app.view.selected = Some(RowId::Lock("accept.herd".into()));
    key(&mut app, KeyCode::Tab);
    insta::assert_snapshot!("detail_waitqueue", render(&mut app, 120, 26));
}

#[test]
fn help_overlay() {
    let mut app = dump_app();
    key(&mut app, KeyCode::Char('?'));
    insta::assert_snapshot!("help", render(&mut app, 120, 40));
}

#[test]
fn picker_of_several_endpoints() {
    let entries = [(311, "httpd"), (4242, "pipedis"), (5150, "")]
        .into_iter()
        .map(|(pid, name)| Entry {
            pid: Some(pid),
            name: Some(name.to_string()).filter(|n| !n.is_empty()),
            path: format!("/run/user/1000/lockmeter/{pid}.sock").into(),
        })
        .collect();
    let mut app = App::for_picker(entries, TableOptions::default(), Duration::from_secs(1));
    key(&mut app, KeyCode::Down);
    insta::assert_snapshot!("picker", render(&mut app, 90, 12));
}

#[test]
fn too_small_terminal() {
    let mut app = dump_app();
    insta::assert_snapshot!("too_small", render(&mut app, 40, 8));
}

#[test]
fn recording_with_position_indicator() {
    let rec = parse_recording(&fixture("recording.jsonl")).unwrap();
    let mut app = App::for_recording(
        "recording.jsonl",
        frames_from(rec.frames),
        TableOptions::default(),
        Duration::from_secs(1),
    );
    key(&mut app, KeyCode::Char(','));
    key(&mut app, KeyCode::Char(','));
    key(&mut app, KeyCode::Char('t'));
    insta::assert_snapshot!("recording", render(&mut app, 120, 16));
}

#[test]
fn live_target_gone_keeps_the_last_data() {
    let mut app = App::new(
        Origin::Endpoint("/run/user/1000/lockmeter/4242.sock".into()),
        TableOptions::default(),
        Duration::from_secs(1),
    );
    app.apply(Feed::Connected {
        pid: 4242,
        name: "pipedis".into(),
    });
    let snap = parse_snapshot(&fixture("pipe_sem.json")).unwrap();
    app.apply(Feed::Data(Box::new(Frame::single(snap))));
    app.apply(Feed::Lost("the endpoint closed the connection".into()));
    app.apply(Feed::Retrying {
        attempt: 2,
        delay: Duration::from_millis(500),
    });
    insta::assert_snapshot!("live_lost", render(&mut app, 120, 12));
}

#[test]
fn live_target_before_any_data() {
    let mut app = App::new(
        Origin::Endpoint("tcp://127.0.0.1:7878".into()),
        TableOptions::default(),
        Duration::from_secs(1),
    );
    insta::assert_snapshot!("live_connecting", render(&mut app, 80, 10));
}

#[test]
fn resizing_redraws_at_the_new_size() {
    let mut app = dump_app();
    let mut terminal = Terminal::new(TestBackend::new(120, 20)).unwrap();
    terminal.draw(|f| view::draw(f, &mut app)).unwrap();
    terminal.backend_mut().resize(64, 12);
    terminal.draw(|f| view::draw(f, &mut app)).unwrap();
    let small = terminal.backend().to_string();
    terminal.backend_mut().resize(30, 6);
    terminal.draw(|f| view::draw(f, &mut app)).unwrap();
    let tiny = terminal.backend().to_string();
    assert!(small.contains("pipe.sem"), "{small}");
    assert!(tiny.contains("too small"), "{tiny}");
}

/// The stacks pane: the helper's two callers on the waiter side, the
/// holder's stack on the other, wrapper frames folded away.
#[test]
fn stacks_pane_of_a_lock_taken_in_a_helper() {
    let snap = parse_snapshot(&fixture("stacks.json")).unwrap();
    let mut app = App::for_dump("stacks.json", snap, TableOptions::default());
    render(&mut app, 120, 44);
    app.view.selected = Some(RowId::Lock("bkl".into()));
    key(&mut app, KeyCode::Char('w'));
    let screen = render(&mut app, 120, 44);
    assert!(
        screen.contains("bkl::Server::handle_request")
            && screen.contains("bkl::Server::accept_loop")
    );
    assert!(
        !screen.contains("lockmeter::meter"),
        "wrapper frames are folded"
    );
    insta::assert_snapshot!("stacks_pane", screen);
    key(&mut app, KeyCode::Esc);
    assert_ne!(app.view.overlay, Overlay::Stacks);
}

/// A dump of `deadlock_demo` (crates/lockmeter/examples), taken by SIGUSR1
/// while deadlocked: the banner stays above the table, `n` opens the pane.
#[test]
fn a_deadlock_shows_a_banner_and_the_now_pane() {
    let snap = parse_snapshot(&fixture("deadlocked.json")).unwrap();
    let mut app = App::for_dump("deadlocked.json", snap, TableOptions::default());
    let table = render(&mut app, 140, 20);
    assert!(table.contains("DEADLOCK: transfer-ab"), "{table}");
    key(&mut app, KeyCode::Char('n'));
    insta::assert_snapshot!("now_pane", render(&mut app, 140, 32));
    key(&mut app, KeyCode::Char('n'));
    let back = render(&mut app, 140, 20);
    assert!(
        back.contains("DEADLOCK: transfer-ab") && back.contains("account.a"),
        "{back}"
    );
}

/// A table merged over two processes (`top --all`): expanded, each call
/// site is one row per process, with the pid in the PID column.
#[test]
fn merged_table_has_a_pid_column_on_expanded_rows() {
    let mut a = parse_snapshot(&fixture("pipe_sem.json")).unwrap();
    let mut b = a.clone();
    a.process.pid = 4242;
    b.process.pid = 4250;
    let merged = Snapshot::merge(&[a.with_pids(), b.with_pids()]).unwrap();
    let mut app = App::for_dump("merged.json", merged, TableOptions::default());
    render(&mut app, 130, 16);
    app.view.selected = Some(RowId::Lock("pipe.sem".into()));
    key(&mut app, KeyCode::Right);
    let screen = render(&mut app, 130, 16);
    assert!(screen.contains("PID"), "{screen}");
    assert_eq!(screen.matches(" 4242 ").count(), 2, "{screen}");
    assert_eq!(screen.matches(" 4250 ").count(), 2, "{screen}");
    insta::assert_snapshot!("merged_pid_column", screen);
}
