//! The allocator [`export_plugin!`](crate::export_plugin) gives a plugin: each call's memory
//! comes from one fixed region, in order, and the region starts over once everything in it
//! has been freed.
//!
//! A plugin's calls are short and free everything they allocate: the host's arguments are
//! dropped when the call returns, and its answer is freed when the host has read it. So
//! between two calls nothing is held, and the next call can take its memory from the start
//! of the region again: an allocation is a few additions instead of a search of the general
//! allocator's free lists, a free is a subtraction, and a call touches the same few pages of
//! memory as the call before it. What does not fit (a large body prefix), and everything
//! while some earlier allocation is still held, goes to the system allocator as before:
//! a plugin that keeps memory from one call to the next (a cache in a `static`) works the
//! same, only without the gain.
//!
//! The region is [`CallArena::BYTES`] of the instance's linear memory. The arena is all
//! zeros when it starts, bookkeeping included, so it lies in the zero-filled part of memory
//! and adds no bytes to the component.

use core::cell::UnsafeCell;
use std::alloc::{GlobalAlloc, Layout, System};

/// Positions handed out from a region of `CAP` bytes, in order, and handed out again from
/// the start once every one of them was given back. The bookkeeping of [`CallArena`],
/// without memory.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bump<const CAP: usize> {
    /// Where the next allocation may start.
    next: usize,
    /// Allocations handed out and not given back.
    live: usize,
}

impl<const CAP: usize> Bump<CAP> {
    /// An empty region.
    #[must_use]
    pub const fn new() -> Self {
        Self { next: 0, live: 0 }
    }

    /// The offset of `size` bytes aligned to `align` (a power of two) in a region that
    /// begins at address `base`, or `None` when they do not fit in what is left.
    pub fn alloc(&mut self, base: usize, size: usize, align: usize) -> Option<usize> {
        let start = base
            .checked_add(self.next)?
            .checked_next_multiple_of(align)?
            - base;
        let end = start.checked_add(size)?;
        if end > CAP {
            return None;
        }
        self.next = end;
        self.live += 1;
        Some(start)
    }

    /// Gives one allocation back; the last one given back empties the region.
    pub fn free(&mut self) {
        self.live = self.live.saturating_sub(1);
        if self.live == 0 {
            self.next = 0;
        }
    }

    /// Resizes the allocation of `old` bytes at `offset` to `new` bytes where it lies: only
    /// the newest allocation can be, and only within the region. False when it cannot.
    pub fn resize(&mut self, offset: usize, old: usize, new: usize) -> bool {
        if offset.checked_add(old) != Some(self.next) {
            return false;
        }
        match offset.checked_add(new) {
            Some(end) if end <= CAP => {
                self.next = end;
                true
            }
            _ => false,
        }
    }

    /// Allocations handed out and not given back.
    #[must_use]
    pub fn live(&self) -> usize {
        self.live
    }

    /// Bytes in use, from the start of the region to the end of the newest allocation.
    #[must_use]
    pub fn used(&self) -> usize {
        self.next
    }
}

/// The region's memory, aligned for any ordinary type.
#[repr(C, align(16))]
struct Region(UnsafeCell<[u8; CallArena::BYTES]>);

/// A global allocator that serves a plugin's calls from one region ([module docs](self)).
/// [`export_plugin!`](crate::export_plugin) installs it; a plugin that brings its own
/// allocator exports with `export_plugin!(Type, without_call_arena)`.
///
/// One thread only: it is shared between threads (`Sync`) only on `wasm32` without the
/// `atomics` feature, where a component runs on one thread.
pub struct CallArena {
    region: Region,
    bump: UnsafeCell<Bump<{ CallArena::BYTES }>>,
}

impl std::fmt::Debug for CallArena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallArena")
            .field("bytes", &Self::BYTES)
            .finish_non_exhaustive()
    }
}

impl Default for CallArena {
    fn default() -> Self {
        Self::new()
    }
}

impl CallArena {
    /// The region's size: a call that plans or reads a chat completion allocates a few KiB,
    /// and a body prefix of up to 64 KiB fits beside it.
    pub const BYTES: usize = 128 << 10;

    /// An empty arena.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            region: Region(UnsafeCell::new([0; Self::BYTES])),
            bump: UnsafeCell::new(Bump::new()),
        }
    }

    fn base(&self) -> *mut u8 {
        self.region.0.get().cast()
    }

    /// The offset of `ptr` in the region, when it lies there.
    fn offset(&self, ptr: *mut u8) -> Option<usize> {
        let offset = (ptr as usize).wrapping_sub(self.base() as usize);
        (offset < Self::BYTES).then_some(offset)
    }
}

// SAFETY: a component without the `atomics` feature runs on one thread, so the arena's
// bookkeeping is never touched by two threads.
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
#[allow(unsafe_code)]
unsafe impl Sync for CallArena {}

// SAFETY: every pointer handed out is either `System`'s or lies in the region with `size`
// bytes after it (`Bump::alloc` keeps the end within the region), aligned as asked; a
// pointer given back is returned to whichever handed it out. `&self` methods mutate the
// bookkeeping through `UnsafeCell` without reentrance: none of them calls another allocator
// method while it holds the reference.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CallArena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: see the impl; the reference ends before `System` is called.
        let bump = unsafe { &mut *self.bump.get() };
        match bump.alloc(self.base() as usize, layout.size(), layout.align()) {
            // SAFETY: the offset is within the region.
            Some(offset) => unsafe { self.base().add(offset) },
            // SAFETY: the caller's layout is passed on as it came.
            None => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if self.offset(ptr).is_some() {
            // SAFETY: see the impl.
            unsafe { &mut *self.bump.get() }.free();
        } else {
            // SAFETY: not the region's, so `System` handed it out with this layout.
            unsafe { System.dealloc(ptr, layout) };
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Some(offset) = self.offset(ptr) else {
            // SAFETY: not the region's, so `System` handed it out with this layout.
            return unsafe { System.realloc(ptr, layout, new_size) };
        };
        // SAFETY: see the impl.
        if unsafe { &mut *self.bump.get() }.resize(offset, layout.size(), new_size) {
            return ptr;
        }
        // SAFETY: the caller guarantees `new_size` with `layout`'s alignment is a valid size.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: a valid, non-zero layout (the caller's guarantees).
        let moved = unsafe { self.alloc(new_layout) };
        if !moved.is_null() {
            // SAFETY: both hold at least the smaller size, and two live allocations do not
            // overlap.
            unsafe {
                core::ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_follow_one_another_aligned() {
        let mut b = Bump::<64>::new();
        assert_eq!(b.alloc(1000, 3, 1), Some(0));
        // 1003 rounded up to a multiple of 8 is 1008: offset 8.
        assert_eq!(b.alloc(1000, 8, 8), Some(8));
        assert_eq!(b.used(), 16);
        assert_eq!(b.live(), 2);
        // Alignment is of the address, not of the offset.
        let mut b = Bump::<64>::new();
        assert_eq!(b.alloc(1004, 4, 8), Some(4));
    }

    #[test]
    fn what_does_not_fit_is_refused_and_changes_nothing() {
        let mut b = Bump::<16>::new();
        assert_eq!(b.alloc(0, 10, 1), Some(0));
        let before = b.clone();
        assert_eq!(b.alloc(0, 7, 1), None);
        assert_eq!(
            b.alloc(0, 1, 16),
            None,
            "aligned to 16, it would start at 16"
        );
        assert_eq!(b.alloc(usize::MAX - 2, 1, 8), None, "no overflow");
        assert_eq!(b, before);
        assert_eq!(b.alloc(0, 6, 1), Some(10), "an exact fit is taken");
    }

    #[test]
    fn the_region_starts_over_only_when_every_allocation_was_given_back() {
        let mut b = Bump::<64>::new();
        b.alloc(0, 10, 1);
        b.alloc(0, 10, 1);
        b.free();
        assert_eq!(b.used(), 20, "one is still held: nothing is reused");
        assert_eq!(b.alloc(0, 1, 1), Some(20));
        b.free();
        b.free();
        assert_eq!((b.used(), b.live()), (0, 0));
        assert_eq!(b.alloc(0, 4, 1), Some(0));
    }

    #[test]
    fn only_the_newest_allocation_resizes_where_it_lies() {
        let mut b = Bump::<32>::new();
        let first = b.alloc(0, 8, 1).unwrap();
        let second = b.alloc(0, 8, 1).unwrap();
        assert!(
            !b.resize(first, 8, 12),
            "the older one would overlap the newer"
        );
        assert!(b.resize(second, 8, 16));
        assert_eq!(b.used(), 24);
        assert!(b.resize(second, 16, 4), "shrinking gives the tail back");
        assert_eq!(b.used(), 12);
        assert!(!b.resize(second, 4, 40), "past the region's end");
        assert_eq!(b.used(), 12);
        assert_eq!(b.live(), 2, "resizing is not allocating");
    }

    #[allow(unsafe_code)]
    #[test]
    fn the_allocator_serves_from_the_region_and_passes_the_rest_on() {
        let arena = Box::new(CallArena::new());
        let small = Layout::from_size_align(100, 8).unwrap();
        let big = Layout::from_size_align(CallArena::BYTES + 1, 8).unwrap();
        // SAFETY: non-zero layouts; every pointer is given back with the layout it came with.
        unsafe {
            let a = arena.alloc(small);
            assert!(arena.offset(a).is_some());
            assert_eq!(a as usize % 8, 0);
            a.write_bytes(7, 100);
            let outside = arena.alloc(big);
            assert!(!outside.is_null() && arena.offset(outside).is_none());
            arena.dealloc(outside, big);
            // The newest grows where it lies, and keeps its bytes.
            let grown = arena.realloc(a, small, 200);
            assert_eq!(grown, a);
            let b = arena.alloc(small);
            // An older one moves, bytes and all.
            let moved = arena.realloc(grown, Layout::from_size_align(200, 8).unwrap(), 300);
            assert_ne!(moved, grown);
            assert!((0..100).all(|i| *moved.add(i) == 7));
            // Too big for what is left: it moves out of the region, bytes and all.
            let out = arena.realloc(moved, Layout::from_size_align(300, 8).unwrap(), 1 << 20);
            assert!(arena.offset(out).is_none());
            assert!((0..100).all(|i| *out.add(i) == 7));
            assert_eq!(arena.bump.get().as_ref().unwrap().live(), 1);
            arena.dealloc(b, small);
            arena.dealloc(out, Layout::from_size_align(1 << 20, 8).unwrap());
            assert_eq!(
                arena.bump.get().as_ref().unwrap().used(),
                0,
                "all given back"
            );
            assert_eq!(arena.alloc(small), a, "the next call starts over");
        }
    }
}
