//! The writer's WAL frames written in one system call per commit.
//!
//! SQLite writes each WAL frame with two `pwrite`s (its 24-byte header, then
//! the page): a commit of a dozen pages is two dozen system calls, a quarter of
//! the writer thread's time under PUT. The writer's connection opens its file
//! through this VFS, a thin layer over the default one that gathers the WAL's
//! consecutive writes in a buffer and writes them with one `pwrite`:
//! - before anything reads, syncs, sizes or truncates the WAL, and before a
//!   write somewhere else in it;
//! - and at the latest in the database file's `xShmBarrier`, which SQLite calls
//!   between the two copies of the WAL index's header that publish a commit
//!   (`walIndexWriteHdr`): no reader, in this process or another, can see a
//!   commit before its frames are in the file.
//!
//! A write past the WAL's allocated end is first given its space
//! (`SQLITE_FCNTL_SIZE_HINT`, in chunks), so a full disk is reported at the
//! write that needs the space, as without the buffer. How far the space goes
//! is asked of the file at the start of each run of writes (another
//! connection, of this process or another, may have truncated the WAL), and
//! asked for the size alone (`statx`, `durable::stat_field`): an `fstat`
//! reads the timestamps, and on Linux 6.13 and later a file whose timestamps
//! were read gets a fine-grained one at its next write, which dirties its
//! inode, so that the WAL's next `fdatasync` writes the inode too.
//!
//! A buffered write that then fails is an I/O error of a page the disk had
//! room for; the process stops there (as for a failed flush: `durable`),
//! since the commit it belongs to can no longer be refused. What is still
//! buffered when the WAL's write lock is given up belongs to no commit (a
//! spilled transaction rolled back) and is dropped.
//!
//! What the WAL received is also handed to the disk's writeback when the
//! writer asks ([`start_writeback`], after it hands a batch to the syncer):
//! a batch committed while the syncer still flushes an earlier one is then
//! on its way to the disk before its own flush begins.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::ptr;
use std::sync::Once;

use rusqlite::ffi;

/// Calls the real file's method.
macro_rules! forward {
    ($real:expr, $method:ident $(, $arg:expr)*) => {{
        let real = $real;
        ((*(*real).pMethods).$method.expect(stringify!($method)))(real $(, $arg)*)
    }};
}
/// Writes out the WAL's buffer (`flushed`), then calls the real file's method.
macro_rules! after_flush {
    ($file:expr, $method:ident $(, $arg:expr)*) => {{
        let file = $file;
        let rc = flushed(file);
        if rc != ffi::SQLITE_OK {
            rc
        } else {
            forward!(shim(file).real, $method $(, $arg)*)
        }
    }};
}

/// The VFS's registered name.
pub const NAME: &CStr = c"quayside-wal-writes";

/// The buffer is written out when it grows past this (a large transaction).
const MAX_PENDING: usize = 1 << 20;

/// The most the default VFS writes in one call (`seekAndWriteFd` masks a
/// length with `0x1ffff`).
const MAX_WRITE: usize = 0x1ffff;

/// The WAL's space is allocated ahead in chunks of this size.
const CHUNK: c_int = 1 << 20;

/// One file opened through this VFS: the default VFS's file follows it in the
/// same allocation (`real`).
#[repr(C)]
struct Shim {
    base: ffi::sqlite3_file,
    real: *mut ffi::sqlite3_file,
    /// The main database file: the WAL writes not yet made. The WAL file:
    /// its database file's shim (`None` when that file is not one).
    role: Role,
}

enum Role {
    Main(Pending),
    Wal(*mut Shim),
}

struct Pending {
    /// The real WAL file the bytes go to.
    wal: *mut ffi::sqlite3_file,
    /// Where in the WAL `bytes` begin.
    offset: i64,
    bytes: Vec<u8>,
    /// How far the WAL's space is allocated (`SQLITE_FCNTL_SIZE_HINT`).
    allocated: i64,
    /// The WAL's path, whose size is asked without its timestamps.
    wal_path: Option<std::path::PathBuf>,
    /// The bytes written to the WAL whose writeback is not started yet
    /// ([`start_writeback`]): from, to.
    unstarted: Option<(i64, i64)>,
    /// The WAL opened for starting writeback (the real file's descriptor
    /// is SQLite's own): opened at the first start, and again after SQLite
    /// opens the WAL again.
    started_through: Option<std::fs::File>,
    /// The writes made to the WAL (tests count them).
    writes: u64,
    /// The times the WAL's size was asked with `fstat`, for want of
    /// `statx` (tests count them).
    fstats: u64,
    /// The writebacks started (tests count them).
    writebacks: u64,
}

const HEADER: usize = std::mem::size_of::<Shim>().next_multiple_of(16);

static REGISTER: Once = Once::new();
static mut VFS: std::mem::MaybeUninit<ffi::sqlite3_vfs> = std::mem::MaybeUninit::uninit();

/// Registers the VFS (once per process); the default VFS stays the default.
pub fn register() {
    REGISTER.call_once(|| unsafe {
        let default = ffi::sqlite3_vfs_find(ptr::null());
        assert!(!default.is_null(), "SQLite has a default VFS");
        let mut vfs = *default;
        vfs.szOsFile = (HEADER + (*default).szOsFile as usize) as c_int;
        vfs.zName = NAME.as_ptr();
        vfs.pAppData = default.cast();
        vfs.xOpen = Some(open);
        vfs.pNext = ptr::null_mut();
        let slot = &raw mut VFS;
        (*slot).write(vfs);
        let rc = ffi::sqlite3_vfs_register((*slot).as_mut_ptr(), 0);
        assert_eq!(rc, ffi::SQLITE_OK, "register the WAL writes' VFS");
    });
}

unsafe fn default_vfs(vfs: *mut ffi::sqlite3_vfs) -> *mut ffi::sqlite3_vfs {
    unsafe { (*vfs).pAppData.cast() }
}

unsafe extern "C" fn open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    unsafe {
        let default = default_vfs(vfs);
        let xopen = (*default).xOpen.expect("xOpen");
        let main = flags & ffi::SQLITE_OPEN_MAIN_DB != 0;
        let wal = flags & ffi::SQLITE_OPEN_WAL != 0;
        if !main && !wal {
            // Journals and temporary files: the default VFS's own file.
            return xopen(default, name, file, flags, out_flags);
        }
        let shim = file.cast::<Shim>();
        let real = file.cast::<u8>().add(HEADER).cast::<ffi::sqlite3_file>();
        let rc = xopen(default, name, real, flags, out_flags);
        if rc != ffi::SQLITE_OK {
            (*file).pMethods = ptr::null();
            return rc;
        }
        let role = if main {
            Role::Main(Pending {
                wal: ptr::null_mut(),
                offset: 0,
                bytes: Vec::new(),
                allocated: 0,
                wal_path: None,
                unstarted: None,
                started_through: None,
                writes: 0,
                fstats: 0,
                writebacks: 0,
            })
        } else {
            let db = ffi::sqlite3_database_file_object(name.cast::<c_char>()).cast::<Shim>();
            let db = if !db.is_null() && ptr::eq((*db).base.pMethods, &METHODS) {
                db
            } else {
                ptr::null_mut()
            };
            if let Some(Role::Main(pending)) = db.as_mut().map(|db| &mut db.role) {
                pending.wal = real;
                pending.offset = 0;
                pending.bytes.clear();
                pending.unstarted = None;
                pending.started_through = None;
                pending.wal_path = (!name.is_null()).then(|| {
                    use std::os::unix::ffi::OsStrExt;
                    let name = CStr::from_ptr(name.cast::<c_char>());
                    std::path::PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes()))
                });
                let mut chunk = CHUNK;
                forward!(
                    real,
                    xFileControl,
                    ffi::SQLITE_FCNTL_CHUNK_SIZE,
                    (&raw mut chunk).cast()
                );
            }
            Role::Wal(db)
        };
        ptr::write(
            shim,
            Shim {
                base: ffi::sqlite3_file { pMethods: &METHODS },
                real,
                role,
            },
        );
        ffi::SQLITE_OK
    }
}

unsafe fn shim<'a>(file: *mut ffi::sqlite3_file) -> &'a mut Shim {
    unsafe { &mut *file.cast::<Shim>() }
}

/// The pending writes of the WAL this file is or belongs to.
unsafe fn pending<'a>(file: *mut ffi::sqlite3_file) -> Option<&'a mut Pending> {
    unsafe {
        match &mut shim(file).role {
            Role::Main(pending) => Some(pending),
            Role::Wal(db) => match db.as_mut().map(|db| &mut db.role) {
                Some(Role::Main(pending)) => Some(pending),
                _ => None,
            },
        }
    }
}

impl Pending {
    /// Asks the WAL's size of the file, without its timestamps where the
    /// system can.
    unsafe fn read_size(&mut self) -> c_int {
        if let Some(path) = &self.wal_path
            && let Ok(size) = super::durable::stat_field(path, super::durable::Field::Size)
        {
            self.allocated = size as i64;
            return ffi::SQLITE_OK;
        }
        self.fstats += 1;
        unsafe { forward!(self.wal, xFileSize, &mut self.allocated) }
    }

    /// Writes out what is buffered.
    unsafe fn flush(&mut self) -> c_int {
        if self.bytes.is_empty() {
            return ffi::SQLITE_OK;
        }
        let mut offset = self.offset;
        let mut rc = ffi::SQLITE_OK;
        for piece in self.bytes.chunks(MAX_WRITE) {
            rc = unsafe {
                forward!(
                    self.wal,
                    xWrite,
                    piece.as_ptr().cast(),
                    piece.len() as c_int,
                    offset
                )
            };
            self.writes += 1;
            if rc != ffi::SQLITE_OK {
                break;
            }
            offset += piece.len() as i64;
        }
        if offset > self.offset {
            self.unstarted = Some(match self.unstarted {
                Some((from, to)) => (from.min(self.offset), to.max(offset)),
                None => (self.offset, offset),
            });
        }
        self.bytes.clear();
        rc
    }

    /// Starts the writeback of what was written to the WAL since the last
    /// start, without waiting for it (see [`start_writeback`]).
    fn start_writeback(&mut self) {
        let Some((from, to)) = self.unstarted.take() else {
            return;
        };
        if self.started_through.is_none() {
            self.started_through = self
                .wal_path
                .as_ref()
                .and_then(|path| std::fs::File::open(path).ok());
        }
        if let Some(file) = &self.started_through
            && start_writeback_of(file, from, to - from)
        {
            self.writebacks += 1;
        }
    }
}

/// Starts the writeback of the WAL's bytes the writer's connection `conn`
/// wrote since the last call, without waiting for it. The writer calls it
/// after handing a batch to the syncer (`db::durable`): when the syncer is
/// still flushing an earlier batch, the disk then already receives this
/// one's frames, and its flush waits only for the rest and the cache flush
/// (on this project's 2-core VM under POST load, `perf trace` timed the
/// flushes at 241 µs on average instead of 419). A hint only, never needed
/// for durability (the flush writes whatever is left); on another
/// connection, or where the system has no `sync_file_range`, it does
/// nothing.
pub fn start_writeback(conn: &rusqlite::Connection) {
    // SAFETY: the connection's handle, open while `conn` is borrowed.
    if let Some(pending) = unsafe { main_pending(conn.handle()) } {
        pending.start_writeback();
    }
}

/// The pending writes of the connection `db`'s main file, when that file is
/// one of this VFS's.
unsafe fn main_pending<'a>(db: *mut ffi::sqlite3) -> Option<&'a mut Pending> {
    // SAFETY: an open connection; its main file is taken as a shim only
    // when its methods are this VFS's.
    unsafe {
        let file = main_file(db).ok()?;
        if !ptr::eq((*file).pMethods, &METHODS) {
            return None;
        }
        match &mut shim(file).role {
            Role::Main(pending) => Some(pending),
            Role::Wal(_) => None,
        }
    }
}

/// The `sqlite3_file` of the connection `db`'s main database, whichever VFS
/// opened it (`SQLITE_FCNTL_FILE_POINTER`); SQLite's error code when there
/// is none. It stays open with its methods until the connection closes.
///
/// # Safety
/// `db` is an open connection, used by no other thread meanwhile.
pub(super) unsafe fn main_file(db: *mut ffi::sqlite3) -> Result<*mut ffi::sqlite3_file, c_int> {
    let mut file: *mut ffi::sqlite3_file = ptr::null_mut();
    // SAFETY: as the caller promises; the file control writes the pointer.
    let rc = unsafe {
        ffi::sqlite3_file_control(
            db,
            c"main".as_ptr(),
            ffi::SQLITE_FCNTL_FILE_POINTER,
            (&raw mut file).cast(),
        )
    };
    match rc {
        ffi::SQLITE_OK if !file.is_null() => Ok(file),
        ffi::SQLITE_OK => Err(ffi::SQLITE_MISUSE),
        code => Err(code),
    }
}

/// `sync_file_range(SYNC_FILE_RANGE_WRITE)`: the dirty pages of the range
/// are sent to the disk, and the call returns without waiting for them.
#[cfg(target_os = "linux")]
fn start_writeback_of(file: &std::fs::File, offset: i64, length: i64) -> bool {
    use std::os::fd::AsRawFd;
    unsafe extern "C" {
        fn sync_file_range(fd: c_int, offset: i64, nbytes: i64, flags: std::ffi::c_uint) -> c_int;
    }
    const SYNC_FILE_RANGE_WRITE: std::ffi::c_uint = 2;
    // SAFETY: an open descriptor; the call reads nothing of this process.
    unsafe { sync_file_range(file.as_raw_fd(), offset, length, SYNC_FILE_RANGE_WRITE) == 0 }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback_of(_: &std::fs::File, _: i64, _: i64) -> bool {
    false
}

/// Writes out the buffer before an operation on the WAL.
unsafe fn flushed(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe {
        match &shim(file).role {
            Role::Wal(_) => pending(file).map_or(ffi::SQLITE_OK, |p| p.flush()),
            Role::Main(_) => ffi::SQLITE_OK,
        }
    }
}

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe {
        let flush = flushed(file);
        let s = shim(file);
        if let Role::Wal(db) = s.role
            && let Some(Role::Main(pending)) = db.as_mut().map(|db| &mut db.role)
        {
            pending.wal = ptr::null_mut();
        }
        let rc = forward!(s.real, xClose);
        ptr::drop_in_place(&mut s.role);
        if flush != ffi::SQLITE_OK { flush } else { rc }
    }
}

unsafe extern "C" fn read(
    file: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    unsafe { after_flush!(file, xRead, buf, amount, offset) }
}

unsafe extern "C" fn write(
    file: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    unsafe {
        let real = shim(file).real;
        let pending = match shim(file).role {
            Role::Wal(_) => pending(file),
            Role::Main(_) => None,
        };
        let Some(p) = pending else {
            return forward!(real, xWrite, buf, amount, offset);
        };
        if p.bytes.is_empty() || p.offset + p.bytes.len() as i64 != offset {
            // A new run of writes.
            let rc = p.flush();
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            // Another connection may have truncated the WAL since the last.
            let rc = p.read_size();
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            p.offset = offset;
        }
        let end = offset + i64::from(amount);
        if end > p.allocated {
            // The space first, so that a full disk fails this write.
            let mut hint = end;
            let rc = forward!(
                real,
                xFileControl,
                ffi::SQLITE_FCNTL_SIZE_HINT,
                (&raw mut hint).cast()
            );
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            let rc = p.read_size();
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            if end > p.allocated {
                // No space given ahead (a VFS without size hints): this
                // write goes out now.
                let rc = p.flush();
                if rc != ffi::SQLITE_OK {
                    return rc;
                }
                return forward!(real, xWrite, buf, amount, offset);
            }
        }
        let bytes = std::slice::from_raw_parts(buf.cast::<u8>(), amount as usize);
        p.bytes.extend_from_slice(bytes);
        if p.bytes.len() >= MAX_PENDING {
            return p.flush();
        }
        ffi::SQLITE_OK
    }
}

unsafe extern "C" fn truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    unsafe { after_flush!(file, xTruncate, size) }
}

unsafe extern "C" fn sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    unsafe { after_flush!(file, xSync, flags) }
}

unsafe extern "C" fn file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    unsafe { after_flush!(file, xFileSize, size) }
}

unsafe extern "C" fn lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    unsafe { forward!(shim(file).real, xLock, level) }
}

unsafe extern "C" fn unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    unsafe { forward!(shim(file).real, xUnlock, level) }
}

unsafe extern "C" fn check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    unsafe { forward!(shim(file).real, xCheckReservedLock, out) }
}

unsafe extern "C" fn file_control(
    file: *mut ffi::sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    unsafe { after_flush!(file, xFileControl, op, arg) }
}

unsafe extern "C" fn sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe { forward!(shim(file).real, xSectorSize) }
}

unsafe extern "C" fn device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    unsafe { forward!(shim(file).real, xDeviceCharacteristics) }
}

unsafe extern "C" fn shm_map(
    file: *mut ffi::sqlite3_file,
    page: c_int,
    size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    unsafe { forward!(shim(file).real, xShmMap, page, size, extend, out) }
}

/// The WAL's write lock: the WAL-index's lock slot 0.
const WAL_WRITE_LOCK: c_int = 0;

unsafe extern "C" fn shm_lock(
    file: *mut ffi::sqlite3_file,
    offset: c_int,
    n: c_int,
    flags: c_int,
) -> c_int {
    unsafe {
        if flags & ffi::SQLITE_SHM_UNLOCK != 0
            && (offset..offset + n).contains(&WAL_WRITE_LOCK)
            && let Some(p) = pending(file)
        {
            // The write lock is given up. Anything still buffered belongs to
            // no commit (a commit's frames went out in `shm_barrier`, before
            // the lock is given up): a spilled transaction rolled back. Kept,
            // it would go out at the next barrier, over frames another
            // connection may have committed meanwhile at the same place.
            p.bytes.clear();
        }
        forward!(shim(file).real, xShmLock, offset, n, flags)
    }
}

/// Called between the two copies of the WAL index header that publish a
/// commit: the commit's frames go to the file first.
unsafe extern "C" fn shm_barrier(file: *mut ffi::sqlite3_file) {
    unsafe {
        let rc = pending(file).map_or(ffi::SQLITE_OK, |p| p.flush());
        if rc != ffi::SQLITE_OK {
            log::error!(
                "the WAL's frames of a commit could not be written (SQLite error {rc}); stopping (the next start recovers every commit that reached the file)"
            );
            std::process::abort();
        }
        forward!(shim(file).real, xShmBarrier)
    }
}

unsafe extern "C" fn shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    unsafe { forward!(shim(file).real, xShmUnmap, delete) }
}

unsafe extern "C" fn fetch(
    file: *mut ffi::sqlite3_file,
    offset: i64,
    amount: c_int,
    out: *mut *mut c_void,
) -> c_int {
    unsafe { forward!(shim(file).real, xFetch, offset, amount, out) }
}

unsafe extern "C" fn unfetch(
    file: *mut ffi::sqlite3_file,
    offset: i64,
    page: *mut c_void,
) -> c_int {
    unsafe { forward!(shim(file).real, xUnfetch, offset, page) }
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: Some(shm_map),
    xShmLock: Some(shm_lock),
    xShmBarrier: Some(shm_barrier),
    xShmUnmap: Some(shm_unmap),
    xFetch: Some(fetch),
    xUnfetch: Some(unfetch),
};

#[cfg(test)]
mod tests {
    use std::path::Path;

    use rusqlite::{Connection, OpenFlags};

    use super::{MAX_PENDING, MAX_WRITE};

    fn through_the_vfs(path: &Path) -> Connection {
        super::register();
        let conn = Connection::open_with_flags_and_vfs(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
            super::NAME,
        )
        .expect("open through the VFS");
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
             PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body BLOB NOT NULL);",
        )
        .expect("set up");
        conn
    }

    /// The writes the connection's WAL received so far.
    fn wal_writes(conn: &Connection) -> u64 {
        counts(conn).0
    }

    /// The writes the connection's WAL received so far, and the times its
    /// size was asked of the file.
    fn counts(conn: &Connection) -> (u64, u64) {
        let pending = pending_of(conn);
        (pending.writes, pending.fstats)
    }

    /// The main file's state of a connection opened through the VFS.
    fn pending_of(conn: &Connection) -> &super::Pending {
        // SAFETY: the connection is open while it is borrowed.
        unsafe { super::main_pending(conn.handle()) }.expect("a main file of this VFS")
    }

    /// What a reader on the default VFS finds: rows, and their bytes summed.
    fn seen(reader: &Connection) -> (i64, i64) {
        reader
            .query_row(
                "SELECT count(*), coalesce(sum(length(body)), 0) FROM t",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("read")
    }

    fn insert(conn: &Connection, rows: usize, bytes: usize) {
        let tx = conn.unchecked_transaction().expect("begin");
        for _ in 0..rows {
            tx.execute(
                "INSERT INTO t (body) VALUES (randomblob(?1))",
                [bytes as i64],
            )
            .expect("insert");
        }
        tx.commit().expect("commit");
    }

    #[test]
    fn a_commit_s_frames_go_out_in_one_write() {
        let dir = tempfile::tempdir().expect("temp dir");
        let conn = through_the_vfs(&dir.path().join("data.db"));
        insert(&conn, 1, 10);
        for _ in 0..5 {
            let before = wal_writes(&conn);
            // Twenty pages of their own: forty `pwrite`s without the VFS.
            insert(&conn, 20, 3000);
            assert_eq!(wal_writes(&conn) - before, 1, "one write for the commit");
        }
        // A commit larger than one write of the default VFS takes a few.
        let before = wal_writes(&conn);
        insert(&conn, 100, 3000);
        let made = wal_writes(&conn) - before;
        let most = (100 * 4120 / MAX_WRITE + 2) as u64;
        assert!((2..=most).contains(&made), "{made} writes, at most {most}");
    }

    /// The WAL's size is asked without its timestamps (reading them makes
    /// the file's next write dirty its inode on Linux 6.13+), and asked again
    /// at every run of writes: after another connection truncated the WAL
    /// and committed first, the next commit gets its space ahead again.
    #[test]
    fn the_wal_s_size_is_asked_again_after_another_connection_truncated_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("data.db");
        let conn = through_the_vfs(&path);
        let wal = dir.path().join("data.db-wal");
        let chunk = u64::try_from(super::CHUNK).expect("a chunk's size");
        for _ in 0..50 {
            insert(&conn, 1, 100);
        }
        if cfg!(target_os = "linux") {
            assert_eq!(counts(&conn).1, 0, "no fstat of the WAL");
        }
        let other = Connection::open(&path).expect("another connection");
        for round in 0..3 {
            other
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .expect("checkpoint");
            assert_eq!(std::fs::metadata(&wal).expect("the WAL").len(), 0);
            // The other connection starts the WAL over, and this one's next
            // commit begins after its frames, not at the header.
            other
                .execute("INSERT INTO t (body) VALUES (randomblob(100))", [])
                .expect("another's commit");
            assert!(std::fs::metadata(&wal).expect("the WAL").len() < chunk);
            insert(&conn, 1, 100);
            let size = std::fs::metadata(&wal).expect("the WAL").len();
            assert_eq!(size, chunk, "round {round}: its space ahead");
        }
    }

    /// Frames a transaction spilled and then rolled back are not written
    /// once the write lock is given up: another connection may by then have
    /// committed frames at the same place in the WAL.
    #[test]
    fn a_rolled_back_transaction_s_frames_never_reach_another_s_commit() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("data.db");
        let conn = through_the_vfs(&path);
        conn.execute_batch("PRAGMA cache_size = 20").expect("cache");
        let other = Connection::open(&path).expect("another connection");
        insert(&conn, 1, 10);
        for round in 0..3 {
            other
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .expect("checkpoint");
            // Spilled into the WAL (buffered), then rolled back.
            let tx = conn.unchecked_transaction().expect("begin");
            for _ in 0..60 {
                tx.execute("INSERT INTO t (body) VALUES (randomblob(3000))", [])
                    .expect("insert");
            }
            tx.rollback().expect("rollback");
            other
                .execute("INSERT INTO t (body) VALUES (randomblob(3000))", [])
                .expect("another's commit");
            // A read of this connection's begins with a barrier.
            let (rows, _) = seen(&conn);
            assert_eq!(rows, round + 2, "round {round}");
            let fresh = Connection::open(&path).expect("a fresh connection");
            assert_eq!(seen(&fresh).0, round + 2, "round {round}");
            let ok: String = fresh
                .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                .expect("check");
            assert_eq!(ok, "ok", "round {round}");
        }
    }

    #[test]
    fn every_commit_is_whole_for_a_reader_on_the_default_vfs() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("data.db");
        let conn = through_the_vfs(&path);
        // A small page cache, so that large transactions spill frames into
        // the WAL before their commit, and read them back.
        conn.execute_batch("PRAGMA cache_size = 20").expect("cache");
        let reader =
            Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("reader");
        let other = Connection::open(&path).expect("another connection");
        let (mut rows, mut bytes) = (0i64, 0i64);
        let sizes: [(usize, usize); 6] = [
            (1, 100),
            (3, 5000),
            (40, 3000),
            // Past the buffer's bound: written out within the transaction.
            (3, MAX_PENDING),
            (500, 700),
            (1, 10),
        ];
        for round in 0..4 {
            for (n, size) in sizes {
                insert(&conn, n, size);
                rows += n as i64;
                bytes += (n * size) as i64;
                assert_eq!(seen(&reader), (rows, bytes), "round {round}: {n} of {size}");
            }
            // A transaction that spilled, rolled back: nothing of it is seen,
            // and the next commit's frames replace its.
            let tx = conn.unchecked_transaction().expect("begin");
            for _ in 0..200 {
                tx.execute("INSERT INTO t (body) VALUES (randomblob(3000))", [])
                    .expect("insert");
            }
            tx.rollback().expect("rollback");
            assert_eq!(seen(&reader), (rows, bytes));
            // Another connection empties the WAL to nothing between commits.
            other
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .expect("checkpoint");
        }
        let ok: String = reader
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .expect("check");
        assert_eq!(ok, "ok");
        drop(conn);
        drop(reader);
        drop(other);
        let again = Connection::open(&path).expect("reopen");
        assert_eq!(seen(&again), (rows, bytes), "all of it in the file");
    }

    /// SQLite's recovery at the next open finds every commit in the WAL
    /// when the process stopped without closing (as after SIGKILL): the
    /// frames were in the file when the commit returned.
    #[test]
    fn a_wal_left_behind_is_recovered_whole() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("data.db");
        let conn = through_the_vfs(&path);
        for n in 1..=30 {
            insert(&conn, n, 1500);
        }
        let copy = dir.path().join("copy.db");
        // The file and its WAL as a killed process leaves them.
        std::fs::copy(&path, &copy).expect("copy");
        std::fs::copy(
            dir.path().join("data.db-wal"),
            dir.path().join("copy.db-wal"),
        )
        .expect("copy the WAL");
        drop(conn);
        let recovered = Connection::open(&copy).expect("open the copy");
        assert_eq!(seen(&recovered), (465, 465 * 1500));
    }

    /// What a commit wrote to the WAL is handed to writeback when the writer
    /// asks, once: the range from the first byte written since the last
    /// start to the last; a connection of another VFS is left alone.
    #[test]
    fn a_commit_s_frames_are_handed_to_writeback_once_asked() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("data.db");
        let conn = through_the_vfs(&path);
        insert(&conn, 1, 10);
        let (_, first_end) = pending_of(&conn).unstarted.expect("a commit not started");
        super::start_writeback(&conn);
        let begun = pending_of(&conn).writebacks;
        insert(&conn, 5, 3000);
        insert(&conn, 5, 3000);
        let (from, to) = pending_of(&conn)
            .unstarted
            .expect("two commits not started");
        assert_eq!(from, first_end, "from where the last start ended");
        let page: i64 = conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .expect("page size");
        let frames = (to - from) / (24 + page);
        assert!(frames >= 10, "at least a page per row: {frames}");
        assert_eq!((to - from) % (24 + page), 0, "whole frames");
        assert_eq!(pending_of(&conn).writebacks, begun, "none started unasked");
        super::start_writeback(&conn);
        assert_eq!(pending_of(&conn).writebacks, begun + 1);
        assert_eq!(pending_of(&conn).unstarted, None);
        super::start_writeback(&conn);
        assert_eq!(pending_of(&conn).writebacks, begun + 1, "nothing new");
        let other = Connection::open(&path).expect("default VFS");
        super::start_writeback(&other);
        assert_eq!(seen(&other), (11, 10 + 10 * 3000));
    }
}
