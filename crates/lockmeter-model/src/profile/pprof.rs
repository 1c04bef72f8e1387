//! pprof's `profile.proto`, written with `prost` from hand-declared
//! messages (only the fields lockmeter fills; field numbers from
//! google/pprof `proto/profile.proto`).
//!
//! Sample types: `contentions/count`, `wait/nanoseconds` (the default),
//! `hold/nanoseconds`, `acquisitions/count`; labels `lock`, `kind`, `site`
//! (and `mode` for rwlocks). One profile is one [`Side`]: the waiter
//! profile, or the holder profile ("blamed to the holder").

use std::collections::HashMap;
use std::io::Write;

use prost::Message;

use super::{samples, ProfileFrame, METRICS};
use crate::stacks::Side;
use crate::Snapshot;

#[derive(Clone, PartialEq, Message)]
/// A pprof profile (`perftools.profiles.Profile`).
pub struct Profile {
    /// What each value of a sample is.
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    /// The stacks and their values.
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    /// The one mapping every location is in (already symbolized).
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    /// Every distinct (function, line, address).
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    /// Every distinct function.
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// Every string; entry 0 is "".
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    /// Start of the window (Unix ns).
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    /// Length of the window.
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    /// What one period is.
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    /// 1: every estimate is already weighted.
    #[prost(int64, tag = "12")]
    pub period: i64,
    /// Notes shown by `go tool pprof` (string indices).
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    /// The sample type shown by default (`wait`).
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

#[derive(Clone, PartialEq, Message)]
/// A sample type: quantity and unit.
pub struct ValueType {
    /// A string index: the quantity.
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    /// A string index: its unit.
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

#[derive(Clone, PartialEq, Message)]
/// One stack with its values.
pub struct Sample {
    /// Leaf first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// One per sample type.
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    /// lock, kind, site (and mode).
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

#[derive(Clone, PartialEq, Message)]
/// A string label of a sample.
pub struct Label {
    /// A string index: the label name.
    #[prost(int64, tag = "1")]
    pub key: i64,
    /// A string index: the label value.
    #[prost(int64, tag = "2")]
    pub str: i64,
}

#[derive(Clone, PartialEq, Message)]
/// A mapped binary.
pub struct Mapping {
    /// Unique, from 1.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Lowest address.
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    /// Past the highest address.
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    /// A string index.
    #[prost(int64, tag = "5")]
    pub filename: i64,
    /// Locations are already symbolized.
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    /// Functions name their files.
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    /// Lines are set.
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    /// Inlined frames are their own locations.
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

#[derive(Clone, PartialEq, Message)]
/// A code location.
pub struct Location {
    /// Unique, from 1.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// The mapping (1).
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    /// The return address the frame was resolved from (0 for a call site).
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// One line: the function and its line.
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

#[derive(Clone, PartialEq, Message)]
/// A line of a location.
pub struct Line {
    /// The function.
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    /// One line: the function and its line.
    #[prost(int64, tag = "2")]
    pub line: i64,
}

#[derive(Clone, PartialEq, Message)]
/// A function.
pub struct Function {
    /// Unique, from 1.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// A string index: the function name.
    #[prost(int64, tag = "2")]
    pub name: i64,
    /// A string index: the same name.
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    /// A string index.
    #[prost(int64, tag = "4")]
    pub filename: i64,
}

/// Interns strings, functions and locations as profile.proto wants them
/// (string 0 is ""; ids start at 1).
#[derive(Default)]
struct Builder {
    strings: Vec<String>,
    string_ids: HashMap<String, i64>,
    functions: Vec<Function>,
    function_ids: HashMap<(i64, i64), u64>,
    locations: Vec<Location>,
    location_ids: HashMap<(u64, i64, u64), u64>,
}

impl Builder {
    fn new() -> Builder {
        let mut b = Builder::default();
        b.string("");
        b
    }

    fn string(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.string_ids.get(s) {
            return i;
        }
        let i = self.strings.len() as i64;
        self.strings.push(s.to_string());
        self.string_ids.insert(s.to_string(), i);
        i
    }

    fn location(&mut self, frame: &ProfileFrame<'_>) -> u64 {
        let (name, file, line, address) = match frame {
            ProfileFrame::Resolved(f) => (
                f.function.as_str(),
                f.file.as_deref().unwrap_or(""),
                i64::from(f.line),
                f.address,
            ),
            ProfileFrame::Site(site) => {
                let (file, line) = split_site(site);
                (*site, file, line, 0)
            }
        };
        let (name, file) = (self.string(name), self.string(file));
        let next = self.functions.len() as u64 + 1;
        let function_id = *self.function_ids.entry((name, file)).or_insert(next);
        if function_id == next {
            self.functions.push(Function {
                id: function_id,
                name,
                system_name: name,
                filename: file,
            });
        }
        let next = self.locations.len() as u64 + 1;
        let id = *self
            .location_ids
            .entry((function_id, line, address))
            .or_insert(next);
        if id == next {
            self.locations.push(Location {
                id,
                mapping_id: 1,
                address,
                line: vec![Line { function_id, line }],
            });
        }
        id
    }
}

/// `src/x.rs:10:5` → (`src/x.rs`, 10).
fn split_site(site: &str) -> (&str, i64) {
    let mut parts = site.rsplitn(3, ':');
    let (_col, line, file) = (parts.next(), parts.next(), parts.next());
    match (file, line.and_then(|l| l.parse().ok())) {
        (Some(file), Some(line)) => (file, line),
        _ => (site, 0),
    }
}

/// The profile of one side, as a message.
pub fn profile(snap: &Snapshot, side: Side) -> Profile {
    let mut b = Builder::new();
    let sample_type = METRICS
        .iter()
        .map(|m| {
            let (t, u) = m.pprof_type();
            ValueType {
                r#type: b.string(t),
                unit: b.string(u),
            }
        })
        .collect();
    let keys = [
        b.string("lock"),
        b.string("kind"),
        b.string("site"),
        b.string("mode"),
    ];
    let mut sample = Vec::new();
    for s in samples(snap, side) {
        let location_id = s.frames.iter().map(|f| b.location(f)).collect();
        let mut label = vec![
            Label {
                key: keys[0],
                str: b.string(s.lock.name()),
            },
            Label {
                key: keys[1],
                str: b.string(s.lock.kind.as_str()),
            },
            Label {
                key: keys[2],
                str: b.string(s.site),
            },
        ];
        if let Some(mode) = s.mode {
            label.push(Label {
                key: keys[3],
                str: b.string(mode),
            });
        }
        sample.push(Sample {
            location_id,
            value: s.values.iter().map(|&v| v.round() as i64).collect(),
            label,
        });
    }
    let comment = vec![
        b.string(&format!("lockmeter {} profile of {} (pid {})", side.as_str(), snap.process.name, snap.process.pid)),
        b.string(&if snap.stacks.rate_ns > 0 {
            format!(
                "a wait of d ns was captured with probability min(1, d/{}) and weighted by its inverse",
                snap.stacks.rate_ns
            )
        } else {
            "no stacks captured: one frame per call site".to_string()
        }),
    ];
    let mapping = vec![Mapping {
        id: 1,
        memory_start: 0,
        memory_limit: u64::MAX,
        filename: b.string(&snap.process.name),
        has_functions: true,
        has_filenames: true,
        has_line_numbers: true,
        has_inline_frames: true,
    }];
    let period_type = Some(sample_type_of(&mut b, 0));
    let default_sample_type = b.string("wait");
    Profile {
        sample_type,
        sample,
        mapping,
        location: std::mem::take(&mut b.locations),
        function: std::mem::take(&mut b.functions),
        string_table: std::mem::take(&mut b.strings),
        time_nanos: snap.window.start_unix_ns as i64,
        duration_nanos: snap.window.elapsed_ns as i64,
        period_type,
        period: 1,
        comment,
        default_sample_type,
    }
}

fn sample_type_of(b: &mut Builder, i: usize) -> ValueType {
    let (t, u) = METRICS[i].pprof_type();
    ValueType {
        r#type: b.string(t),
        unit: b.string(u),
    }
}

/// The profile of one side, gzip-compressed protobuf (`.pb.gz`), the form
/// `go tool pprof` and the profilers that read pprof expect.
pub fn encode_gz(snap: &Snapshot, side: Side) -> Vec<u8> {
    let raw = profile(snap, side).encode_to_vec();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing into a Vec cannot fail.
    let _ = gz.write_all(&raw);
    gz.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites_split_into_file_and_line() {
        assert_eq!(split_site("src/main.rs:10:5"), ("src/main.rs", 10));
        assert_eq!(split_site("weird"), ("weird", 0));
    }
}
