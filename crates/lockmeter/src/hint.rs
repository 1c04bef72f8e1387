//! Asking for a lock's cache line, for writing, before the attempt.
//!
//! The observed path tries the lock once before it waits (to tell NOWAIT
//! from a contended acquisition), and a `lock_api` `try_lock` reads the
//! lock word before its compare-exchange. When the line sits in another
//! core's cache, that read brings it over shared and the compare-exchange
//! has to take it over again: two transfers where the bare `lock()`, a
//! compare-exchange alone, makes one. `prefetchw` first asks for the line
//! for writing, so it comes over once.
//!
//! Measured on the AMD EPYC host of session 18, in one process, the same
//! lockmeter Mutex loop with the hint off and on, alternately
//! (docs/performance.md, "Session 18"): with the two vCPUs far apart (a
//! 350-460 ns round trip), on/off read 1.25-1.31 in the 2- and 8-thread
//! `work` rows and 1.05-1.28 in `hammer`; with them near (40-55 ns),
//! 0.92-0.99 in `work`. Uncontended, the hint and its feature test cost
//! the observed Mutex about 2 % (0.3 ns).

/// Whether this CPU can take [`OwnLine::hint`], asked once: a recorder
/// keeps one, so that the observed path tests a byte of the recorder it
/// already holds in a register, where asking the static cost it two loads
/// of the static's address and value, and a path that must make no call
/// could not ask (`docs/performance.md`, "Session 25").
#[derive(Clone, Copy, Debug)]
pub(crate) struct OwnLine {
    /// Only true when the CPU was asked and has PREFETCHW.
    can: bool,
}

impl OwnLine {
    /// Asks the CPU whether it can.
    pub(crate) fn ask() -> OwnLine {
        #[cfg(all(target_arch = "x86_64", not(miri), not(lockmeter_loom)))]
        return OwnLine {
            can: x86::has_prefetchw(),
        };
        #[cfg(not(all(target_arch = "x86_64", not(miri), not(lockmeter_loom))))]
        OwnLine { can: false }
    }

    /// Asks the CPU for the cache line of `word` in a state it can
    /// write. A hint: it changes no memory and no result. x86-64 with
    /// PREFETCHW only; elsewhere, under miri and under loom, nothing.
    #[inline(always)]
    pub(crate) fn hint<T>(self, word: &T) {
        #[cfg(all(target_arch = "x86_64", not(miri), not(lockmeter_loom)))]
        if self.can {
            // SAFETY: `can` is true only when the CPU has PREFETCHW.
            unsafe { x86::prefetchw(word as *const T as *const u8) };
        }
        #[cfg(not(all(target_arch = "x86_64", not(miri), not(lockmeter_loom))))]
        let _ = (self.can, word);
    }
}

#[cfg(all(target_arch = "x86_64", not(miri), not(lockmeter_loom)))]
mod x86 {
    /// Whether the CPU has PREFETCHW: CPUID leaf 0x8000_0001, ECX bit 8
    /// (PRFCHW, "3dnowprefetch"). Asked here, since std's feature
    /// detection does not know the feature, and an x86-64 CPU without it
    /// may fault on the instruction. Once per recorder.
    pub(super) fn has_prefetchw() -> bool {
        // Leaf 0x8000_0000 says whether the extended leaf asked next exists.
        use std::arch::x86_64::__cpuid;
        __cpuid(0x8000_0000).eax >= 0x8000_0001 && __cpuid(0x8000_0001).ecx & (1 << 8) != 0
    }

    /// # Safety
    /// Only on a CPU that has PREFETCHW (an x86-64 CPU without it may
    /// fault on it). It only looks up the address's translation and never
    /// faults on it; it writes no register, memory or flag.
    #[inline(always)]
    pub(super) unsafe fn prefetchw(word: *const u8) {
        // SAFETY: see above.
        unsafe {
            std::arch::asm!(
                "prefetchw [{0}]",
                in(reg) word,
                options(nostack, preserves_flags, readonly)
            );
        }
    }
}
