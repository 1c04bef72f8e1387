//! Pinning threads to CPUs, for the placements of seed 001.
//!
//! Pinning can fail (a container's cpuset, a non-Linux system): callers get
//! `false` and run unpinned, and the results say so.

/// The CPUs this process may run on, lowest first; empty if unknown.
pub fn allowed_cpus() -> Vec<usize> {
    imp::allowed_cpus()
}

/// Pins the calling thread to `cpu`; returns whether it worked.
pub fn pin_current_thread(cpu: usize) -> bool {
    imp::pin(cpu)
}

/// How many CPUs this process may use (at least 1).
pub fn cpu_count() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(target_os = "linux")]
mod imp {
    use std::mem;

    pub(super) fn allowed_cpus() -> Vec<usize> {
        // SAFETY: cpu_set_t is a plain bit array; all-zero is a valid value.
        let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
        // SAFETY: `set` is a valid, writable cpu_set_t of the size passed;
        // pid 0 is the calling thread.
        let rc = unsafe { libc::sched_getaffinity(0, mem::size_of::<libc::cpu_set_t>(), &mut set) };
        if rc != 0 {
            return Vec::new();
        }
        let max = 8 * mem::size_of::<libc::cpu_set_t>();
        // SAFETY: CPU_ISSET reads the bit array for indices below its size.
        (0..max)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect()
    }

    pub(super) fn pin(cpu: usize) -> bool {
        if cpu >= 8 * mem::size_of::<libc::cpu_set_t>() {
            return false;
        }
        // SAFETY: as in `allowed_cpus`.
        let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
        // SAFETY: `cpu` is below the set's size, checked above.
        unsafe { libc::CPU_SET(cpu, &mut set) };
        // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is
        // the calling thread.
        unsafe { libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), &set) == 0 }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub(super) fn allowed_cpus() -> Vec<usize> {
        Vec::new()
    }

    pub(super) fn pin(_cpu: usize) -> bool {
        false
    }
}
