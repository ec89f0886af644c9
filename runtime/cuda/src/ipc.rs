//! The channel between a session and its GPU worker process: one region of
//! shared memory (a `memfd` both processes map) holding a ring of command
//! slots, a reply word and a staging area for bulk data.
//!
//! The session is the only producer (its side is behind a mutex); the
//! worker consumes commands in order. Commands that need no answer
//! (launches, frees, events, memsets) cost the session one copy into a slot
//! and one store; those that do (allocations, copies to the host, loads)
//! wait for the worker to publish the command's sequence number in the
//! reply word, their answer in the staging area. A command that uses the
//! staging area always waits, so the area has one user at a time.
//!
//! The worker spins on the ring while commands keep coming and sleeps on a
//! futex after `SPIN` without one; the session wakes it when it sleeps. A
//! waiting session spins briefly too, then sleeps on the reply word, looking
//! every `POLL` at whether the worker is still alive.

use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Bytes per command slot, and slots in the ring.
pub(crate) const SLOT: usize = 2048;
pub(crate) const SLOTS: usize = 512;
/// Bulk data moves through this many bytes at a time.
pub(crate) const STAGING: usize = 32 << 20;
const HEADER: usize = 4096;
const RING: usize = SLOT * SLOTS;
pub(crate) const REGION: usize = HEADER + RING + STAGING;

/// How long the worker spins without work before it sleeps, and how often
/// a sleeping side looks at whether the other is still there.
const SPIN: Duration = Duration::from_millis(20);
pub(crate) const POLL: Duration = Duration::from_millis(10);
/// How long the session spins on a reply before it sleeps.
const REPLY_SPIN: Duration = Duration::from_micros(200);

// Header words, each in its own 128 bytes (x86 cores fetch cache lines in
// pairs, so words 64 bytes apart written by different sides still collide).
const TAIL: usize = 0; // u64, written by the session: commands pushed
const HEAD: usize = 128; // u64, written by the worker: commands done
const REPLY: usize = 256; // u32, low bits of (last answered command + 1)
const WORKER_SLEEPS: usize = 384; // u32, 1 while the worker sleeps
const SESSION_WAITS: usize = 512; // u32, 1 while the session sleeps on REPLY
const REPLY_LEN: usize = 640; // u64, bytes of the answer in the staging area
const FAILED: usize = 768; // u32, 1 once a command without answer failed

/// One mapping of the shared region.
pub(crate) struct Region {
    base: *mut u8,
    pub(crate) fd: i32,
    /// The session's last reading of `HEAD`: the worker is at least this
    /// far, so `push` reads the shared word (a cache line the worker
    /// writes after every command) only when the ring looks full.
    head_seen: AtomicU64,
}

// SAFETY: the region is plain shared memory; every access that races goes
// through atomics, and the protocol gives each byte range one writer at a time.
unsafe impl Send for Region {}
unsafe impl Sync for Region {}

impl Region {
    /// A new region (the session's side).
    pub(crate) fn create() -> Result<Region, String> {
        // SAFETY: plain libc calls with valid arguments; failures are checked.
        unsafe {
            let fd = libc::memfd_create(c"tilebook-gpu".as_ptr(), 0);
            if fd < 0 {
                return Err(format!("memfd_create: {}", std::io::Error::last_os_error()));
            }
            if libc::ftruncate(fd, REGION as libc::off_t) != 0 {
                let e = std::io::Error::last_os_error();
                libc::close(fd);
                return Err(format!("sizing the shared region: {e}"));
            }
            Region::map(fd)
        }
    }

    /// Map the region behind `fd` (the worker's side gets the fd from its parent).
    pub(crate) fn map(fd: i32) -> Result<Region, String> {
        // SAFETY: maps `REGION` bytes of a file at least that long.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                REGION,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(format!(
                "mapping the shared region: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(Region {
            base: p.cast(),
            fd,
            head_seen: AtomicU64::new(0),
        })
    }

    fn u64_at(&self, off: usize) -> &AtomicU64 {
        // SAFETY: header offsets are aligned and inside the mapping.
        unsafe { &*(self.base.add(off) as *const AtomicU64) }
    }

    fn u32_at(&self, off: usize) -> &AtomicU32 {
        // SAFETY: as above.
        unsafe { &*(self.base.add(off) as *const AtomicU32) }
    }

    fn slot(&self, seq: u64) -> *mut u8 {
        // SAFETY: the index is reduced modulo the ring.
        unsafe { self.base.add(HEADER + (seq as usize % SLOTS) * SLOT) }
    }

    /// The staging area. The caller is its one user (see the module docs).
    #[allow(clippy::mut_from_ref)]
    pub(crate) fn staging(&self) -> &mut [u8] {
        // SAFETY: in bounds; one user at a time by protocol.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(HEADER + RING), STAGING) }
    }

    // ---- the session's side ----

    /// Queue one encoded command; returns its sequence number. Waits while
    /// the ring is full (`alive` says whether to keep waiting).
    pub(crate) fn push(&self, cmd: &[u8], alive: &dyn Fn() -> bool) -> Result<u64, String> {
        if cmd.len() + 4 > SLOT {
            return Err(format!(
                "a GPU command of {} bytes is larger than a slot ({SLOT})",
                cmd.len()
            ));
        }
        let tail = self.u64_at(TAIL).load(Ordering::Relaxed);
        // The clock is read only once the ring is full.
        let mut waited: Option<Instant> = None;
        while tail - self.head_seen.load(Ordering::Relaxed) >= SLOTS as u64 {
            let head = self.u64_at(HEAD).load(Ordering::Acquire);
            self.head_seen.store(head, Ordering::Relaxed);
            if tail - head < SLOTS as u64 {
                break;
            }
            self.wake_worker();
            std::thread::yield_now();
            let since = *waited.get_or_insert_with(Instant::now);
            if since.elapsed() > POLL {
                if !alive() {
                    return Err(DEAD.into());
                }
                waited = Some(Instant::now());
            }
        }
        let p = self.slot(tail);
        // SAFETY: the slot is free (the worker is past it) and `cmd` fits.
        unsafe {
            std::ptr::copy_nonoverlapping((cmd.len() as u32).to_le_bytes().as_ptr(), p, 4);
            std::ptr::copy_nonoverlapping(cmd.as_ptr(), p.add(4), cmd.len());
        }
        self.u64_at(TAIL).store(tail + 1, Ordering::Release);
        fence(Ordering::SeqCst);
        if self.u32_at(WORKER_SLEEPS).load(Ordering::Relaxed) == 1 {
            self.wake_worker();
        }
        Ok(tail)
    }

    fn wake_worker(&self) {
        let w = self.u32_at(WORKER_SLEEPS);
        if w.swap(0, Ordering::SeqCst) == 1 {
            futex_wake(w);
        }
    }

    /// Wait for the answer to command `seq`; returns its length in the staging area.
    pub(crate) fn wait_reply(&self, seq: u64, alive: &dyn Fn() -> bool) -> Result<usize, String> {
        let want = (seq + 1) as u32;
        let reply = self.u32_at(REPLY);
        let start = Instant::now();
        while reply.load(Ordering::Acquire) != want {
            if start.elapsed() < REPLY_SPIN {
                std::hint::spin_loop();
                continue;
            }
            let waits = self.u32_at(SESSION_WAITS);
            waits.store(1, Ordering::SeqCst);
            let now = reply.load(Ordering::SeqCst);
            if now != want {
                futex_wait(reply, now, POLL);
            }
            waits.store(0, Ordering::SeqCst);
            if reply.load(Ordering::Acquire) != want && !alive() {
                return Err(DEAD.into());
            }
        }
        Ok(self.u64_at(REPLY_LEN).load(Ordering::Acquire) as usize)
    }

    /// Whether a command without answer failed since the last `take_failed`.
    pub(crate) fn failed(&self) -> bool {
        self.u32_at(FAILED).load(Ordering::Relaxed) != 0
    }

    pub(crate) fn clear_failed(&self) {
        self.u32_at(FAILED).store(0, Ordering::Relaxed);
    }

    // ---- the worker's side ----

    /// The next command, copied into `cmd`, waiting for one; its sequence
    /// number, or `None` once `keep_going` says stop. While commands keep
    /// coming the clock is not read (it is a system call on some virtual
    /// machines).
    pub(crate) fn next(&self, keep_going: &dyn Fn() -> bool, cmd: &mut Vec<u8>) -> Option<u64> {
        let head = self.u64_at(HEAD).load(Ordering::Relaxed);
        let mut idle: Option<Instant> = None;
        loop {
            if self.u64_at(TAIL).load(Ordering::Acquire) > head {
                let p = self.slot(head);
                // SAFETY: the session finished writing this slot before
                // publishing the tail past it.
                unsafe {
                    let mut len = [0u8; 4];
                    std::ptr::copy_nonoverlapping(p, len.as_mut_ptr(), 4);
                    let len = (u32::from_le_bytes(len) as usize).min(SLOT - 4);
                    cmd.clear();
                    cmd.extend_from_slice(std::slice::from_raw_parts(p.add(4), len));
                }
                return Some(head);
            }
            if idle.get_or_insert_with(Instant::now).elapsed() < SPIN {
                std::hint::spin_loop();
                continue;
            }
            let sleeps = self.u32_at(WORKER_SLEEPS);
            sleeps.store(1, Ordering::SeqCst);
            if self.u64_at(TAIL).load(Ordering::SeqCst) == head {
                futex_wait(sleeps, 1, Duration::from_secs(1));
            }
            sleeps.store(0, Ordering::SeqCst);
            if !keep_going() {
                return None;
            }
            idle = Some(Instant::now() - SPIN + Duration::from_millis(1));
        }
    }

    /// Mark command `seq` done (without an answer).
    pub(crate) fn done(&self, seq: u64) {
        self.u64_at(HEAD).store(seq + 1, Ordering::Release);
    }

    /// Mark command `seq` done with an answer of `len` bytes in the staging area.
    pub(crate) fn answer(&self, seq: u64, len: usize) {
        self.u64_at(REPLY_LEN).store(len as u64, Ordering::Release);
        self.done(seq);
        let reply = self.u32_at(REPLY);
        reply.store((seq + 1) as u32, Ordering::SeqCst);
        if self.u32_at(SESSION_WAITS).load(Ordering::SeqCst) == 1 {
            futex_wake(reply);
        }
    }

    /// Note that a command without answer failed.
    pub(crate) fn set_failed(&self) {
        self.u32_at(FAILED).store(1, Ordering::Relaxed);
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping once; nothing borrows it past us.
        unsafe {
            libc::munmap(self.base.cast(), REGION);
            libc::close(self.fd);
        }
    }
}

pub(crate) const DEAD: &str = "the GPU worker process has exited";

fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT on a live shared word with a valid timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
        );
    }
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a live shared word.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX);
    }
}

/// A command or answer being written.
#[derive(Default)]
pub(crate) struct Enc(pub(crate) Vec<u8>);

impl Enc {
    pub(crate) fn new(op: u8) -> Enc {
        // Room for a launch of a dozen arguments without growing.
        let mut v = Vec::with_capacity(160);
        v.push(op);
        Enc(v)
    }
    pub(crate) fn u8(mut self, v: u8) -> Enc {
        self.0.push(v);
        self
    }
    pub(crate) fn u32(mut self, v: u32) -> Enc {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub(crate) fn u64(mut self, v: u64) -> Enc {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub(crate) fn bytes(self, v: &[u8]) -> Enc {
        let mut e = self.u64(v.len() as u64);
        e.0.extend_from_slice(v);
        e
    }
    pub(crate) fn str(self, v: &str) -> Enc {
        self.bytes(v.as_bytes())
    }
    /// `Ok(())` as 0, an error as 1 and its message.
    pub(crate) fn status(self, r: &Result<(), String>) -> Enc {
        match r {
            Ok(()) => self.u8(0),
            Err(e) => self.u8(1).str(e),
        }
    }
}

/// A command or answer being read; reading past the end gives zeros, which
/// the worker then reports as a malformed command.
pub(crate) struct Dec<'a> {
    buf: &'a [u8],
    pub(crate) short: bool,
}

impl<'a> Dec<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Dec<'a> {
        Dec { buf, short: false }
    }
    fn take(&mut self, n: usize) -> &'a [u8] {
        if self.buf.len() < n {
            self.short = true;
            self.buf = &[];
            return &[];
        }
        let (a, b) = self.buf.split_at(n);
        self.buf = b;
        a
    }
    pub(crate) fn u8(&mut self) -> u8 {
        self.take(1).first().copied().unwrap_or(0)
    }
    pub(crate) fn u32(&mut self) -> u32 {
        self.take(4).try_into().map(u32::from_le_bytes).unwrap_or(0)
    }
    pub(crate) fn u64(&mut self) -> u64 {
        self.take(8).try_into().map(u64::from_le_bytes).unwrap_or(0)
    }
    pub(crate) fn bytes(&mut self) -> &'a [u8] {
        let n = self.u64();
        self.take(usize::try_from(n).unwrap_or(usize::MAX))
    }
    pub(crate) fn str(&mut self) -> String {
        String::from_utf8_lossy(self.bytes()).into_owned()
    }
    pub(crate) fn status(&mut self) -> Result<(), String> {
        match self.u8() {
            0 => Ok(()),
            _ => Err(self.str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker thread on the same region answers each command with its
    /// bytes reversed; commands without answer add to a count it reports.
    #[test]
    fn commands_flow_in_order_through_the_ring() {
        let session = std::sync::Arc::new(Region::create().unwrap());
        let worker = Region::map(unsafe { libc::dup(session.fd) }).unwrap();
        let t = std::thread::spawn(move || {
            let mut quiet = 0u64;
            let mut cmd = vec![];
            while let Some(seq) = worker.next(&|| true, &mut cmd) {
                let mut d = Dec::new(&cmd);
                match d.u8() {
                    0 => {
                        quiet += d.u64();
                        worker.done(seq);
                    }
                    1 => {
                        let mut v = d.bytes().to_vec();
                        v.reverse();
                        let out = Enc::default().u64(quiet).bytes(&v).0;
                        worker.staging()[..out.len()].copy_from_slice(&out);
                        worker.answer(seq, out.len());
                    }
                    _ => {
                        worker.answer(seq, 0);
                        return quiet;
                    }
                }
            }
            0
        });
        let alive = || true;
        // More commands than the ring holds, with answers between.
        for round in 0..3u64 {
            for i in 0..(SLOTS as u64 * 2) {
                session.push(&Enc::new(0).u64(i).0, &alive).unwrap();
            }
            let seq = session.push(&Enc::new(1).bytes(b"abc").0, &alive).unwrap();
            let n = session.wait_reply(seq, &alive).unwrap();
            let mut d = Dec::new(&session.staging()[..n]);
            let per_round = (SLOTS as u64 * 2) * (SLOTS as u64 * 2 - 1) / 2;
            assert_eq!(d.u64(), per_round * (round + 1));
            assert_eq!(d.bytes(), b"cba");
            // Let the worker fall asleep once, then wake it.
            if round == 1 {
                std::thread::sleep(SPIN * 3);
            }
        }
        let seq = session.push(&Enc::new(2).0, &alive).unwrap();
        session.wait_reply(seq, &alive).unwrap();
        assert!(t.join().unwrap() > 0);
    }

    #[test]
    fn a_dead_worker_is_noticed_while_waiting() {
        let session = Region::create().unwrap();
        let seq = session.push(&Enc::new(1).0, &|| true).unwrap();
        let t = Instant::now();
        let r = session.wait_reply(seq, &|| false);
        assert_eq!(r, Err(DEAD.to_string()));
        assert!(t.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn short_input_decodes_as_malformed_not_a_panic() {
        let mut d = Dec::new(&[5, 1]);
        assert_eq!(d.u8(), 5);
        assert_eq!(d.u64(), 0);
        assert!(d.short);
        assert_eq!(d.bytes(), b"");
    }
}
