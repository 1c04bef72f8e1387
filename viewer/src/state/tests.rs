//! Tests of the app's state machine: keys, mouse, feeds and playback.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use lockmeter_model::metric::Metric;
use lockmeter_model::render::{SortKey, TableOptions};
use lockmeter_model::{parse_recording, parse_snapshot, Snapshot};
use ratatui::layout::Rect;

use super::playback::frames_from;
use super::rows::{Row, RowId};
use super::*;

fn mixed() -> Snapshot {
    parse_snapshot(include_str!("../../tests/fixtures/mixed.json")).unwrap()
}

fn dump_app() -> App {
    App::for_dump("mixed.json", mixed(), TableOptions::default())
}

fn live_app() -> App {
    App::new(
        Origin::Endpoint("/tmp/x.sock".into()),
        TableOptions::default(),
        Duration::from_secs(1),
    )
}

/// The feed's word that the endpoint of process `pid` (`name`) answers.
fn connected(pid: u32, name: &str) -> Feed {
    Feed::Connected {
        pid,
        name: name.into(),
    }
}

fn press(app: &mut App, code: KeyCode) -> Action {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn typ(app: &mut App, c: char) -> Action {
    press(app, KeyCode::Char(c))
}

fn lock_names(app: &App) -> Vec<String> {
    app.rows()
        .iter()
        .filter_map(|r| match r {
            Row::Lock { lock, .. } => Some(lock.id.clone()),
            _ => None,
        })
        .collect()
}

/// The recording fixture opened in the app, and its number of frames.
fn recording_app() -> (App, usize) {
    let rec = parse_recording(include_str!("../../tests/fixtures/recording.jsonl")).unwrap();
    let n = rec.frames.len();
    let app = App::for_recording(
        "recording.jsonl",
        frames_from(rec.frames),
        TableOptions::default(),
        Duration::from_secs(1),
    );
    (app, n)
}

fn selected_lock(app: &App) -> String {
    app.selected_lock()
        .map(|l| l.id.clone())
        .unwrap_or_default()
}

#[test]
fn sort_keys_cycle_both_ways_and_invert() {
    let mut app = dump_app();
    assert_eq!(app.view.opts.sort, SortKey::By(Metric::Util));
    typ(&mut app, 's');
    assert_eq!(app.view.opts.sort, SortKey::By(Metric::Con));
    typ(&mut app, '>');
    assert_eq!(app.view.opts.sort, SortKey::By(Metric::HoldMean));
    typ(&mut app, '<');
    typ(&mut app, '<');
    assert_eq!(app.view.opts.sort, SortKey::By(Metric::Util));
    typ(&mut app, '<');
    assert_eq!(app.view.opts.sort, SortKey::Name, "wraps around");
    assert!(!app.view.opts.descending, "names sort A to Z");
    let first = lock_names(&app)[0].clone();
    typ(&mut app, 'i');
    assert!(app.view.opts.descending);
    assert_ne!(lock_names(&app)[0], first);
}

#[test]
fn enter_expands_then_opens_the_detail_pane() {
    let mut app = dump_app();
    app.view.selected = Some(RowId::Lock("bkl".into()));
    let before = app.rows().len();
    press(&mut app, KeyCode::Enter);
    assert!(app.view.expanded.contains("bkl"));
    assert_ne!(app.view.overlay, Overlay::Detail);
    let rows = app.rows();
    assert!(rows.len() > before);
    assert!(rows
        .iter()
        .any(|r| matches!(r, Row::Site { lock, .. } if lock.id == "bkl")));
    assert!(rows
        .iter()
        .any(|r| matches!(r, Row::Holder { lock, .. } if lock.id == "bkl")));
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.view.overlay, Overlay::Detail);
    assert_eq!(selected_lock(&app), "bkl");
    press(&mut app, KeyCode::Esc);
    assert_ne!(app.view.overlay, Overlay::Detail);
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.view.overlay, Overlay::Detail);
}

#[test]
fn collapsing_from_a_site_row_goes_back_to_its_lock() {
    let mut app = dump_app();
    app.view.selected = Some(RowId::Lock("bkl".into()));
    typ(&mut app, 'l');
    typ(&mut app, 'j');
    assert!(
        matches!(app.view.selected, Some(RowId::Site { .. })),
        "{:?}",
        app.view.selected
    );
    typ(&mut app, 'h');
    assert_eq!(app.view.selected, Some(RowId::Lock("bkl".into())));
    assert!(app.view.expanded.contains("bkl"));
    typ(&mut app, 'h');
    assert!(!app.view.expanded.contains("bkl"));
}

#[test]
fn navigation_skips_advisory_lines_and_stops_at_the_ends() {
    let mut app = dump_app();
    for _ in 0..200 {
        typ(&mut app, 'j');
    }
    let rows = app.rows();
    let last = app.selected_index(&rows).unwrap();
    assert!(rows[last].id().is_some());
    assert_eq!(rows[last..].iter().filter(|r| r.id().is_some()).count(), 1);
    drop(rows);
    typ(&mut app, 'g');
    let rows = app.rows();
    assert_eq!(app.selected_index(&rows), Some(0));
    for _ in 0..rows.len() {
        drop(app.on_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE)));
        let rows = app.rows();
        let i = app.selected_index(&rows).unwrap();
        assert!(!matches!(rows[i], Row::Advice { .. }));
    }
}

#[test]
fn filter_narrows_as_you_type_and_escape_clears_it() {
    let mut app = dump_app();
    let all = lock_names(&app).len();
    typ(&mut app, '/');
    for c in "accept".chars() {
        typ(&mut app, c);
    }
    assert_eq!(app.view.opts.filter.as_deref(), Some("accept"));
    let names = lock_names(&app);
    assert!(names.len() < all && !names.is_empty());
    assert!(names.iter().all(|n| n.starts_with("accept.")), "{names:?}");
    // While typing, q is a letter, not quit.
    assert_eq!(typ(&mut app, 'q'), Action::None);
    press(&mut app, KeyCode::Backspace);
    press(&mut app, KeyCode::Enter);
    assert!(app.view.filter_input().is_none());
    assert_eq!(app.view.opts.filter.as_deref(), Some("accept"));
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.view.opts.filter, None);
    assert_eq!(lock_names(&app).len(), all);
}

#[test]
fn filter_matches_call_sites_too() {
    let mut app = dump_app();
    app.set_filter(Some("semaphore.rs".into()));
    let names = lock_names(&app);
    assert!(names.contains(&"pipe.sem.lock".to_string()), "{names:?}");
    assert!(!names.contains(&"bkl".to_string()));
}

#[test]
fn ctrl_c_quits_from_anywhere() {
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    let mut app = dump_app();
    typ(&mut app, '/');
    assert_eq!(app.on_key(ctrl_c), Action::Quit);
    let mut app = dump_app();
    typ(&mut app, '?');
    assert_eq!(app.view.overlay, Overlay::Help);
    assert_eq!(app.on_key(ctrl_c), Action::Quit);
    let mut picker = App::for_picker(vec![], TableOptions::default(), Duration::ZERO);
    assert_eq!(picker.on_key(ctrl_c), Action::Quit);
}

#[test]
fn any_key_closes_help() {
    let mut app = dump_app();
    typ(&mut app, '?');
    assert_eq!(app.view.overlay, Overlay::Help);
    assert_eq!(typ(&mut app, 'x'), Action::None);
    assert_ne!(app.view.overlay, Overlay::Help);
    typ(&mut app, '?');
    assert_eq!(typ(&mut app, 'q'), Action::Quit);
}

#[test]
fn reset_goes_to_the_source_only_when_there_is_one() {
    let mut app = dump_app();
    assert_eq!(typ(&mut app, 'r'), Action::None);
    assert!(app.view.status.as_deref().unwrap_or("").contains("file"));
    let mut live = live_app();
    assert_eq!(typ(&mut live, 'r'), Action::Reset);
    assert_eq!(typ(&mut live, 'd'), Action::Dump);
}

#[test]
fn rates_and_totals_toggle() {
    let mut app = live_app();
    let mut interval = mixed();
    interval.window.elapsed_ns = 1_000_000_000;
    let cumulative = mixed();
    app.apply(Feed::Data(Box::new(Frame {
        interval: interval.clone(),
        cumulative: cumulative.clone(),
    })));
    assert_eq!(app.view.mode, Mode::Rates);
    assert_eq!(app.shown(), Some(&interval));
    typ(&mut app, 't');
    assert_eq!(app.shown(), Some(&cumulative));
}

#[test]
fn pause_holds_frames_and_resume_shows_the_newest() {
    let mut app = live_app();
    let frame = |acq: u64| {
        let mut s = mixed();
        s.locks[0].total.acquisitions = acq;
        Box::new(Frame::single(s))
    };
    app.apply(Feed::Data(frame(1)));
    typ(&mut app, ' ');
    assert!(app.view.paused);
    app.apply(Feed::Data(frame(2)));
    app.apply(Feed::Data(frame(3)));
    assert_eq!(app.shown().unwrap().locks[0].total.acquisitions, 1);
    assert_eq!(app.data.history.len(), 1);
    typ(&mut app, ' ');
    assert!(!app.view.paused);
    assert_eq!(app.shown().unwrap().locks[0].total.acquisitions, 3);
    assert_eq!(
        app.data.history.len(),
        3,
        "paused intervals still count in the sparklines"
    );
}

#[test]
fn a_lost_target_keeps_the_last_data_and_reconnects() {
    let mut app = live_app();
    app.apply(connected(42, "srv"));
    assert_eq!(app.data.link, Link::Live);
    app.apply(Feed::Data(Box::new(Frame::single(mixed()))));
    app.apply(Feed::Lost("the endpoint closed the connection".into()));
    app.apply(Feed::Retrying {
        attempt: 3,
        delay: Duration::from_secs(2),
    });
    assert!(matches!(app.data.link, Link::Lost { attempt: 3, .. }));
    assert!(app.shown().is_some(), "last data kept");
    app.apply(connected(43, "srv"));
    assert_eq!(app.data.link, Link::Live);
    assert!(app
        .view
        .status
        .as_deref()
        .unwrap_or("")
        .contains("reconnected"));
}

#[test]
fn selection_follows_the_lock_when_the_order_changes() {
    let mut app = live_app();
    let snap = mixed();
    app.apply(Feed::Data(Box::new(Frame::single(snap.clone()))));
    app.view.selected = Some(RowId::Lock("accept.herd".into()));
    let mut changed = snap;
    let elapsed = changed.window.elapsed_ns;
    assert!(elapsed > 0);
    for l in &mut changed.locks {
        // UTIL 1000% for the herd, 0 for the rest.
        l.total.hold_ns.total = if l.id == "accept.herd" {
            10 * elapsed
        } else {
            0
        };
    }
    app.apply(Feed::Data(Box::new(Frame::single(changed))));
    let rows = app.rows();
    assert_eq!(app.selected_index(&rows), Some(0));
    assert_eq!(selected_lock(&app), "accept.herd");
}

#[test]
fn clicking_a_header_sorts_and_clicking_again_inverts() {
    let mut app = dump_app();
    app.view.hits.header = vec![(Rect::new(10, 1, 6, 2), SortKey::By(Metric::Contended))];
    let click = |x, y| MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column: x,
        row: y,
        modifiers: KeyModifiers::NONE,
    };
    app.on_mouse(click(12, 2));
    assert_eq!(app.view.opts.sort, SortKey::By(Metric::Contended));
    assert!(app.view.opts.descending);
    app.on_mouse(click(12, 1));
    assert!(!app.view.opts.descending);
    app.on_mouse(click(40, 1));
    assert_eq!(
        app.view.opts.sort,
        SortKey::By(Metric::Contended),
        "a click elsewhere does not sort"
    );
}

#[test]
fn clicking_a_row_selects_it() {
    let mut app = dump_app();
    app.view.hits.rows = (0..20)
        .map(|i| (Rect::new(0, 3 + i, 100, 1), usize::from(i)))
        .collect();
    app.on_mouse(MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column: 5,
        row: 4,
        modifiers: KeyModifiers::NONE,
    });
    let rows = app.rows();
    assert_eq!(app.view.selected, rows[1].id());
}

#[test]
fn recordings_step_and_jump() {
    let (mut app, n) = recording_app();
    let pos = |app: &App| app.data.playback.as_ref().unwrap().pos();
    assert_eq!(pos(&app), n - 1, "opens on the last frame");
    assert_eq!(app.data.history.len(), n);
    typ(&mut app, ',');
    assert_eq!(pos(&app), n - 2);
    assert_eq!(app.data.history.len(), n - 1);
    typ(&mut app, '[');
    assert_eq!(pos(&app), 0);
    typ(&mut app, '.');
    assert_eq!(pos(&app), 1);
    press(&mut app, KeyCode::End);
    assert_eq!(pos(&app), n - 1);
    typ(&mut app, ' ');
    assert_eq!(pos(&app), 0, "playing from the end starts over");
    assert!(app.on_tick());
    assert_eq!(pos(&app), 1);
}

#[test]
fn picker_attaches_to_the_chosen_entry() {
    let entries: Vec<picker::Entry> = (1..=3)
        .map(|pid| picker::Entry {
            pid: Some(pid),
            name: Some(format!("p{pid}")),
            path: format!("/run/lockmeter/{pid}.sock").into(),
        })
        .collect();
    let mut app = App::for_picker(entries.clone(), TableOptions::default(), Duration::ZERO);
    typ(&mut app, 'j');
    typ(&mut app, 'j');
    typ(&mut app, 'j');
    typ(&mut app, 'k');
    assert_eq!(
        press(&mut app, KeyCode::Enter),
        Action::Attach(entries[1].clone())
    );
    app.attached("/run/lockmeter/2.sock".into());
    assert_eq!(app.view.overlay, Overlay::None);
    assert_eq!(app.data.link, Link::Connecting);
}

#[test]
fn advisories_follow_the_thresholds() {
    let mut app = dump_app();
    assert!(!app.advisories().is_empty());
    let strict = lockmeter_model::advice::Thresholds {
        min_events: u64::MAX,
        ..Default::default()
    };
    app.set_thresholds(strict);
    assert!(app.advisories().is_empty());
    assert!(!app.rows().iter().any(|r| matches!(r, Row::Advice { .. })));
}

#[test]
fn one_overlay_at_a_time() {
    let mut app = dump_app();
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.view.overlay, Overlay::Detail);
    typ(&mut app, 'w');
    assert_eq!(app.view.overlay, Overlay::Stacks, "stacks replace detail");
    typ(&mut app, 'n');
    assert_eq!(app.view.overlay, Overlay::Now { scroll: 0 });
    press(&mut app, KeyCode::Down);
    assert_eq!(app.view.overlay, Overlay::Now { scroll: 1 });
    typ(&mut app, '/');
    assert_eq!(app.view.overlay, Overlay::Filter(String::new()));
    press(&mut app, KeyCode::Enter);
    typ(&mut app, '?');
    assert_eq!(app.view.overlay, Overlay::Help);
    typ(&mut app, 'x');
    assert_eq!(app.view.overlay, Overlay::None, "nothing was under help");
}

#[test]
fn a_recording_plays_until_its_last_frame_then_pauses() {
    let (mut app, n) = recording_app();
    assert!(app.view.paused, "a recording opens stopped");
    assert!(!app.on_tick());
    typ(&mut app, ' ');
    assert!(!app.view.paused);
    let moves = (0..n + 2).filter(|_| app.on_tick()).count();
    assert_eq!(moves, n - 1);
    assert!(app.view.paused, "stopped on the last frame");
    typ(&mut app, ' ');
    assert!(!app.view.paused, "plays again from the first frame");
    typ(&mut app, '.');
    assert!(app.view.paused, "stepping stops playing");
}

#[test]
fn the_peer_is_the_process_on_screen() {
    let mut app = live_app();
    app.apply(connected(7, "hello"));
    assert_eq!(
        app.data.peer,
        Some(Peer {
            pid: 7,
            name: "hello".into()
        })
    );
    let snap = mixed();
    let want = Peer {
        pid: snap.process.pid,
        name: snap.process.name.clone(),
    };
    app.apply(Feed::Data(Box::new(Frame::single(snap))));
    assert_eq!(app.data.peer, Some(want));
}
