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

/// Asks the CPU for the cache line of `word` in a state it can write.
/// A hint: it changes no memory and no result. x86-64 with PREFETCHW
/// only; elsewhere, under miri and under loom, nothing.
#[inline(always)]
pub(crate) fn own_line<T>(word: &T) {
    #[cfg(all(target_arch = "x86_64", not(miri), not(lockmeter_loom)))]
    x86::own_line(word as *const T as *const u8);
    #[cfg(not(all(target_arch = "x86_64", not(miri), not(lockmeter_loom))))]
    let _ = word;
}

/// [`own_line`] once the CPU has been asked whether it can: false, doing
/// nothing, before that, so that a path that must make no call can use
/// it. Then the caller goes a way that calls [`own_line`], which asks: a
/// caller that never did would be told false for ever.
#[inline(always)]
pub(crate) fn own_line_known<T>(word: &T) -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri), not(lockmeter_loom)))]
    return x86::own_line_known(word as *const T as *const u8);
    #[cfg(not(all(target_arch = "x86_64", not(miri), not(lockmeter_loom))))]
    {
        let _ = word;
        true
    }
}

#[cfg(all(target_arch = "x86_64", not(miri), not(lockmeter_loom)))]
mod x86 {
    use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

    /// Whether the CPU has PREFETCHW: 0 not asked yet, 1 yes, 2 no. Asked
    /// here, since std's feature detection does not know the feature, and
    /// an x86-64 CPU without it may fault on the instruction.
    static PREFETCHW: AtomicU8 = AtomicU8::new(0);

    #[inline(always)]
    pub(super) fn own_line(word: *const u8) {
        match PREFETCHW.load(Relaxed) {
            // SAFETY: the CPU has PREFETCHW.
            1 => unsafe { prefetchw(word) },
            0 => ask(),
            _ => {}
        }
    }

    #[inline(always)]
    pub(super) fn own_line_known(word: *const u8) -> bool {
        match PREFETCHW.load(Relaxed) {
            1 => {
                // SAFETY: the CPU has PREFETCHW.
                unsafe { prefetchw(word) };
                true
            }
            0 => false,
            _ => true,
        }
    }

    /// # Safety
    /// Only on a CPU that has PREFETCHW (an x86-64 CPU without it may
    /// fault on it). It only looks up the address's translation and never
    /// faults on it; it writes no register, memory or flag.
    #[inline(always)]
    unsafe fn prefetchw(word: *const u8) {
        // SAFETY: see above.
        unsafe {
            std::arch::asm!(
                "prefetchw [{0}]",
                in(reg) word,
                options(nostack, preserves_flags, readonly)
            );
        }
    }

    /// CPUID leaf 0x8000_0001, ECX bit 8 (PRFCHW, "3dnowprefetch").
    #[cold]
    #[inline(never)]
    fn ask() {
        // Leaf 0x8000_0000 says whether the extended leaf asked next exists.
        use std::arch::x86_64::__cpuid;
        let has =
            __cpuid(0x8000_0000).eax >= 0x8000_0001 && __cpuid(0x8000_0001).ecx & (1 << 8) != 0;
        PREFETCHW.store(if has { 1 } else { 2 }, Relaxed);
    }
}
