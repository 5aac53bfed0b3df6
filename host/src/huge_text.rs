//! The program's own machine code moved onto huge pages, where the kernel allows it.
//!
//! A governed call runs a few thousand functions spread over the program's code (the
//! sidecar's is about 25 MB), and at a few hundred calls a second each call finds the
//! translations of those pages gone, evicted by whatever ran in between. Linux maps a
//! program's code from its file in 4 KB pages; only a kernel built to collapse read-only files
//! can put it on 2 MB ones. So [`code_on_huge_pages`] copies the 2 MB-aligned part of the
//! code into anonymous memory advised for huge pages (`MADV_HUGEPAGE`) and moves the copy
//! over the original with `mremap`, at the same addresses: every address holds the same bytes
//! before, during and after, so threads already running are not disturbed. The copy is
//! never writable and executable at once.
//!
//! What it costs: the copy's memory (the code's size, no longer shared with other processes
//! running the same file), and a profiler that reads symbols from the file mapping (perf)
//! sees the moved code as anonymous. Best effort: where a step is refused (another system, a
//! policy that forbids executable anonymous memory, transparent huge pages turned off) the
//! code stays where it was and the outcome says why.

use std::fmt;

/// The size of a huge page on the systems this supports.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
const HUGE_PAGE: usize = 2 << 20;

/// What [`code_on_huge_pages`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HugeText {
    /// This many bytes of the program's code now sit in memory advised for huge pages.
    Moved {
        /// Bytes moved (whole 2 MB pages).
        bytes: usize,
    },
    /// The code was left where it was, for this reason.
    Left(String),
}

impl fmt::Display for HugeText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Moved { bytes } => write!(f, "{} MB of code moved onto huge pages", bytes >> 20),
            Self::Left(why) => write!(f, "code left on small pages: {why}"),
        }
    }
}

/// Move the calling program's own machine code onto huge pages (Linux; elsewhere it says so
/// and does nothing). Call it once, early; a second call finds the code already moved.
///
/// `sluice serve` does this at start (`[serve] code_on_huge_pages`). An embedder may call it
/// for its own program: it moves the code of the whole file sluice is linked into (the
/// program, or the shared library that holds sluice), not only sluice's.
pub fn code_on_huge_pages() -> HugeText {
    match imp::move_code() {
        Ok(bytes) => HugeText::Moved { bytes },
        Err(why) => HugeText::Left(why),
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::ffi::c_void;
    use std::path::Path;

    use rustix::mm::{self, Advice, MapFlags, MprotectFlags, MremapFlags, ProtFlags};

    use super::HUGE_PAGE;

    pub(super) fn move_code() -> Result<usize, String> {
        let thp = "/sys/kernel/mm/transparent_hugepage/enabled";
        if std::fs::read_to_string(thp).is_ok_and(|s| s.contains("[never]")) {
            return Err(format!("transparent huge pages are off ({thp})"));
        }
        let maps = std::fs::read_to_string("/proc/self/maps")
            .map_err(|e| format!("reading /proc/self/maps: {e}"))?;
        let (start, end) = code_mapping(&maps, move_code as *const () as usize)?;
        let from = start.next_multiple_of(HUGE_PAGE);
        let to = end & !(HUGE_PAGE - 1);
        if to <= from {
            return Err(format!(
                "the code's mapping ({} KB) holds no whole 2 MB page",
                (end - start) >> 10
            ));
        }
        // SAFETY: `from..to` lies inside a mapping of this program's code that is readable
        // (its permissions in /proc/self/maps say so) and stays mapped for the program's
        // life; the copy holds the same bytes at the same addresses once moved, and is made
        // executable only after it is written, never both at once.
        #[allow(
            unsafe_code,
            reason = "remapping the program's own code, bytes unchanged"
        )]
        unsafe {
            move_range(from, to - from)
        }
    }

    /// One line of `/proc/self/maps`: its range, permissions and path (empty for anonymous
    /// memory).
    pub(super) struct Mapping<'a> {
        pub(super) start: usize,
        pub(super) end: usize,
        pub(super) perms: &'a str,
        pub(super) path: &'a str,
    }

    /// The lines of `maps` (the text of `/proc/self/maps`) as [`Mapping`]s.
    pub(super) fn mappings(maps: &str) -> impl Iterator<Item = Mapping<'_>> {
        maps.lines().filter_map(|line| {
            let mut fields = line.split_ascii_whitespace();
            let (a, b) = fields.next()?.split_once('-')?;
            let perms = fields.next()?;
            Some(Mapping {
                start: usize::from_str_radix(a, 16).ok()?,
                end: usize::from_str_radix(b, 16).ok()?,
                perms,
                path: fields.nth(3).unwrap_or(""),
            })
        })
    }

    /// The executable, file-backed mapping in `maps` (the text of `/proc/self/maps`) that
    /// holds the address `inside`, as its start and end.
    pub(super) fn code_mapping(maps: &str, inside: usize) -> Result<(usize, usize), String> {
        let m = mappings(maps)
            .find(|m| (m.start..m.end).contains(&inside))
            .ok_or("no mapping in /proc/self/maps holds the code")?;
        match (m.perms.as_bytes().get(2), Path::new(m.path).is_absolute()) {
            (Some(b'x'), true) => Ok((m.start, m.end)),
            (Some(b'x'), false) => Err("the code is already in anonymous memory".into()),
            _ => Err(format!(
                "the mapping of the code is {}, not executable",
                m.perms
            )),
        }
    }

    /// Copy `len` bytes at `from` (both 2 MB-aligned) into memory advised for huge pages,
    /// make the copy read-only and executable, and move it over `from`.
    ///
    /// # Safety
    ///
    /// `from..from + len` must be mapped and readable, and must not change while this runs.
    #[allow(
        unsafe_code,
        reason = "the copy and the move of the program's own code"
    )]
    unsafe fn move_range(from: usize, len: usize) -> Result<usize, String> {
        // SAFETY (each block below): the anonymous mapping is ours alone until it is moved;
        // `from..from + len` is readable by the caller's promise.
        let raw = unsafe {
            mm::mmap_anonymous(
                std::ptr::null_mut(),
                len + HUGE_PAGE,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE,
            )
        }
        .map_err(|e| format!("mapping {} MB for the copy: {e}", len >> 20))?;
        // Aligned, so that the kernel can back it with huge pages; the slack at each end is
        // given back.
        let copy = (raw as usize).next_multiple_of(HUGE_PAGE);
        let lead = copy - raw as usize;
        let trail = HUGE_PAGE - lead;
        unsafe {
            if lead > 0 {
                let _ = mm::munmap(raw, lead);
            }
            if trail > 0 {
                let _ = mm::munmap((copy + len) as *mut c_void, trail);
            }
        }
        let copy = copy as *mut c_void;
        let undo = |what: String| {
            unsafe {
                let _ = mm::munmap(copy, len);
            }
            what
        };
        unsafe { mm::madvise(copy, len, Advice::LinuxHugepage) }.map_err(|e| {
            undo(format!(
                "advising huge pages (transparent huge pages off?): {e}"
            ))
        })?;
        unsafe { std::ptr::copy_nonoverlapping(from as *const u8, copy.cast::<u8>(), len) };
        unsafe { mm::mprotect(copy, len, MprotectFlags::READ | MprotectFlags::EXEC) }.map_err(
            |e| {
                undo(format!(
                    "making the copy executable (forbidden by a policy?): {e}"
                ))
            },
        )?;
        unsafe { mm::mremap_fixed(copy, len, len, MremapFlags::MAYMOVE, from as *mut c_void) }
            .map_err(|e| undo(format!("moving the copy over the code: {e}")))?;
        Ok(len)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub(super) fn move_code() -> Result<usize, String> {
        Err("huge pages for code are moved on Linux only".into())
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::imp::{code_mapping, mappings};

    const MAPS: &str = "\
5600aa000000-5600aa900000 r--p 00000000 fe:01 42  /usr/local/bin/sluice
5600aa900000-5600ac300000 r-xp 008f8000 fe:01 42  /usr/local/bin/sluice
5600ac300000-5600ac400000 rw-p 02230000 fe:01 42  /usr/local/bin/sluice
7f0000000000-7f0000200000 r-xp 00000000 00:00 0 
";

    #[test]
    fn finds_the_executable_file_mapping_that_holds_the_code() {
        assert_eq!(
            code_mapping(MAPS, 0x5600_ab00_0000),
            Ok((0x5600_aa90_0000, 0x5600_ac30_0000))
        );
    }

    #[test]
    fn refuses_a_mapping_that_is_not_code_or_already_moved() {
        let data = code_mapping(MAPS, 0x5600_aa00_1000).unwrap_err();
        assert!(data.contains("r--p"), "{data}");
        let moved = code_mapping(MAPS, 0x7f00_0000_1000).unwrap_err();
        assert!(moved.contains("anonymous"), "{moved}");
        let nowhere = code_mapping(MAPS, 0x1000).unwrap_err();
        assert!(nowhere.contains("no mapping"), "{nowhere}");
    }

    /// The test binary's own code, moved: the functions still run, and a second call finds
    /// nothing left to move.
    #[test]
    fn moves_this_program_s_code_and_it_still_runs() {
        let first = super::code_on_huge_pages();
        match &first {
            super::HugeText::Moved { bytes } => assert!(*bytes >= super::HUGE_PAGE),
            // A test binary may be too small for a whole 2 MB page, or the system may refuse.
            super::HugeText::Left(why) => eprintln!("left: {why}"),
        }
        let sum: u64 = (1..=1000u64).map(|n| n * n).sum();
        assert_eq!(sum, 333_833_500);
        if let super::HugeText::Moved { bytes } = first {
            // The moved range is now an anonymous executable mapping of its own.
            let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
            let anonymous_code = mappings(&maps).any(|m| {
                m.perms.starts_with("r-x") && m.path.is_empty() && m.end - m.start >= bytes
            });
            assert!(
                anonymous_code,
                "no anonymous code mapping of {bytes} bytes:\n{maps}"
            );
            let second = super::code_on_huge_pages();
            assert!(matches!(second, super::HugeText::Left(_)), "{second:?}");
        }
    }
}
