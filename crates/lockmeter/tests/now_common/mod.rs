//! Helpers for the "now" tests: a layer plus a layer that captures the
//! watchdog's events, named threads running under that subscriber, and
//! polling a snapshot until something shows.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lockmeter::Handle;
use lockmeter_model::Snapshot;
use tracing::field::{Field, Visit};
use tracing_subscriber::prelude::*;

/// One captured event: its level and every field as text.
#[derive(Debug, Clone)]
pub struct Event {
    pub level: tracing::Level,
    pub fields: Vec<(String, String)>,
}

impl Event {
    pub fn field(&self, name: &str) -> &str {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map_or("", |(_, v)| v.as_str())
    }
}

#[derive(Clone, Default)]
pub struct Events(Arc<Mutex<Vec<Event>>>);

impl Events {
    pub fn all(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }

    pub fn at(&self, level: tracing::Level) -> Vec<Event> {
        self.all()
            .into_iter()
            .filter(|e| e.level == level)
            .collect()
    }
}

struct Capture(Events);

struct Fields(Vec<(String, String)>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .push((field.name().to_string(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_string(), value.to_string()));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Capture {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if event.metadata().target() != "lockmeter" {
            return;
        }
        let mut f = Fields(Vec::new());
        event.record(&mut f);
        self.0 .0.lock().unwrap().push(Event {
            level: *event.metadata().level(),
            fields: f.0,
        });
    }
}

/// A subscriber with a lockmeter layer built by `builder` and a capture.
pub struct Observed {
    pub handle: Handle,
    pub events: Events,
    pub dispatch: tracing::Dispatch,
}

pub fn observed(builder: lockmeter::LayerBuilder) -> Observed {
    let layer = builder.build();
    let handle = layer.handle();
    let events = Events::default();
    let dispatch = tracing::Dispatch::new(
        tracing_subscriber::registry()
            .with(layer)
            .with(Capture(events.clone())),
    );
    Observed {
        handle,
        events,
        dispatch,
    }
}

impl Observed {
    /// Spawns a thread named `name` running `f` under this subscriber.
    pub fn spawn<R: Send + 'static>(
        &self,
        name: &str,
        f: impl FnOnce() -> R + Send + 'static,
    ) -> std::thread::JoinHandle<R> {
        let d = self.dispatch.clone();
        std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || tracing::dispatcher::with_default(&d, f))
            .expect("spawn")
    }

    /// Snapshots until `pred` holds or `limit` passes; the last snapshot
    /// and how long it took.
    pub fn poll(&self, limit: Duration, pred: impl Fn(&Snapshot) -> bool) -> (Snapshot, Duration) {
        let t0 = Instant::now();
        loop {
            let s = self.handle.snapshot();
            if pred(&s) || t0.elapsed() > limit {
                return (s, t0.elapsed());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `file:line:` of the line after the call, to compare with sites.
#[macro_export]
macro_rules! next_line {
    () => {
        format!("{}:{}:", file!(), line!() + 1)
    };
}
