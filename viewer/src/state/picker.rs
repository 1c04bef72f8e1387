//! Choosing one of several endpoints when `top` is given no target.

use std::path::PathBuf;

/// One attachable process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub pid: Option<u32>,
    pub name: Option<String>,
    pub path: PathBuf,
}

/// The list and which entry is selected.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Picker {
    pub entries: Vec<Entry>,
    pub selected: usize,
}

impl Picker {
    pub fn new(entries: Vec<Entry>) -> Picker {
        Picker {
            entries,
            selected: 0,
        }
    }

    pub fn step(&mut self, delta: isize) {
        if self.entries.is_empty() {
            return;
        }
        let last = self.entries.len() as isize - 1;
        self.selected = (self.selected as isize + delta).clamp(0, last) as usize;
    }

    pub fn chosen(&self) -> Option<&Entry> {
        self.entries.get(self.selected)
    }
}
