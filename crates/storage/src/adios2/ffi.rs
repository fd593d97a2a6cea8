//! ADIOS2's C API, loaded at run time: the one module of the crate with `unsafe` code.
//!
//! Why loaded, not linked: Debian has no ADIOS2 package, and the `adios2` wheel on PyPI, which
//! ships the library with its C API, lives in a Python environment a build cannot know.
//! Loading `libadios2_c.so` when an ADIOS2 sink begins keeps every build of wgpipe working
//! without ADIOS2 (only that sink fails, saying where it looked) and lets one binary use the
//! wheel of any environment: `WGPIPE_ADIOS2_LIB` names the library (e.g.
//! `.venv/lib/python3.11/site-packages/adios2/libadios2_c.so`, which finds its own
//! dependencies through its RPATH), else the dynamic linker's search path is asked.
//!
//! The declarations below are those of `adios2/c/*.h` (checked against ADIOS2 2.12.1, the
//! wheel the tests use; these functions exist since 2.9); only what the sink calls is declared.
#![allow(unsafe_code, reason = "calls into ADIOS2's C library; each call's contract is stated where it is made")]

use std::ffi::{CString, c_char, c_float, c_int, c_void};
use std::path::PathBuf;
use std::sync::OnceLock;

use libloading::Library;

/// Environment variable naming the ADIOS2 C library to load.
pub(crate) const LIB_ENV: &str = "WGPIPE_ADIOS2_LIB";
/// The library's name for the dynamic linker.
const LIB_NAME: &str = "libadios2_c.so";

/// Opaque handles of the C API.
#[repr(C)]
pub(crate) struct Adios {
    _private: [u8; 0],
}
#[repr(C)]
pub(crate) struct Io {
    _private: [u8; 0],
}
#[repr(C)]
pub(crate) struct Variable {
    _private: [u8; 0],
}
#[repr(C)]
pub(crate) struct Engine {
    _private: [u8; 0],
}
#[repr(C)]
pub(crate) struct Attribute {
    _private: [u8; 0],
}

/// `adios2_type`.
pub(crate) type Type = c_int;
pub(crate) const TYPE_STRING: Type = 0;
pub(crate) const TYPE_FLOAT: Type = 1;
pub(crate) const TYPE_DOUBLE: Type = 2;
pub(crate) const TYPE_INT32: Type = 7;
pub(crate) const TYPE_INT64: Type = 8;
pub(crate) const TYPE_UINT8: Type = 9;
pub(crate) const TYPE_UINT16: Type = 10;
pub(crate) const TYPE_UINT32: Type = 11;
pub(crate) const TYPE_UINT64: Type = 12;
/// `adios2_mode`.
const MODE_WRITE: c_int = 1;
const MODE_SYNC: c_int = 5;
/// `adios2_step_mode_append`.
const STEP_MODE_APPEND: c_int = 0;
/// `adios2_step_status_ok`.
const STEP_STATUS_OK: c_int = 0;
/// `adios2_constant_dims_true`.
const CONSTANT_DIMS: c_int = 1;

/// The functions the sink calls, resolved once.
struct Api {
    /// Keeps the functions below loaded; never unloaded (a static).
    _lib: Library,
    init_serial: unsafe extern "C" fn() -> *mut Adios,
    declare_io: unsafe extern "C" fn(*mut Adios, *const c_char) -> *mut Io,
    set_engine: unsafe extern "C" fn(*mut Io, *const c_char) -> c_int,
    set_parameter: unsafe extern "C" fn(*mut Io, *const c_char, *const c_char) -> c_int,
    define_variable: unsafe extern "C" fn(
        *mut Io,
        *const c_char,
        Type,
        usize,
        *const usize,
        *const usize,
        *const usize,
        c_int,
    ) -> *mut Variable,
    define_attribute: unsafe extern "C" fn(*mut Io, *const c_char, Type, *const c_void) -> *mut Attribute,
    open: unsafe extern "C" fn(*mut Io, *const c_char, c_int) -> *mut Engine,
    begin_step: unsafe extern "C" fn(*mut Engine, c_int, c_float, *mut c_int) -> c_int,
    put: unsafe extern "C" fn(*mut Engine, *mut Variable, *const c_void, c_int) -> c_int,
    end_step: unsafe extern "C" fn(*mut Engine) -> c_int,
    close: unsafe extern "C" fn(*mut Engine) -> c_int,
    finalize: unsafe extern "C" fn(*mut Adios) -> c_int,
}

/// Where the library was looked for, for the error when it is not found.
fn candidates() -> Vec<PathBuf> {
    match std::env::var_os(LIB_ENV) {
        Some(p) => vec![PathBuf::from(p)],
        None => vec![PathBuf::from(LIB_NAME)],
    }
}

/// Loads the library and resolves every function.
fn load() -> Result<Api, String> {
    let mut tried = Vec::new();
    for path in candidates() {
        // SAFETY: loading ADIOS2's C library runs its initialisers, which only set up the
        // library's own state; no other code of this process depends on them.
        let lib = match unsafe { Library::new(&path) } {
            Ok(lib) => lib,
            Err(e) => {
                tried.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        macro_rules! get {
            ($name:literal) => {
                // SAFETY: the symbol is the C API function of that name, whose signature is
                // declared in `Api` exactly as in ADIOS2's headers (checked against 2.12.1).
                *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                    .map_err(|e| format!("{}: no {} ({e}): not an ADIOS2 2.9+ C library", path.display(), $name))?
            };
        }
        return Ok(Api {
            init_serial: get!("adios2_init_serial"),
            declare_io: get!("adios2_declare_io"),
            set_engine: get!("adios2_set_engine"),
            set_parameter: get!("adios2_set_parameter"),
            define_variable: get!("adios2_define_variable"),
            define_attribute: get!("adios2_define_attribute"),
            open: get!("adios2_open"),
            begin_step: get!("adios2_begin_step"),
            put: get!("adios2_put"),
            end_step: get!("adios2_end_step"),
            close: get!("adios2_close"),
            finalize: get!("adios2_finalize"),
            _lib: lib,
        });
    }
    Err(format!(
        "cannot load ADIOS2's C library ({}): install ADIOS2 or the adios2 wheel (pip install adios2) and set \
         {LIB_ENV} to its libadios2_c.so (e.g. .venv/lib/python3.X/site-packages/adios2/libadios2_c.so)",
        tried.join("; ")
    ))
}

/// The library, loaded on first use.
fn api() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(load).as_ref().map_err(Clone::clone)
}

/// Whether the library loads (for the sink's early checks).
pub(crate) fn available() -> Result<(), String> {
    api().map(|_| ())
}

fn cstring(s: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("{s:?} holds a NUL byte, which ADIOS2's C API cannot take"))
}

/// An ADIOS2 instance with one IO and, once opened, one engine writing it.
///
/// Owned by one thread at a time (the writer's); ADIOS2's handles are not shared.
pub(crate) struct Writer {
    api: &'static Api,
    adios: *mut Adios,
    io: *mut Io,
    engine: *mut Engine,
}

// SAFETY: the handles belong to this writer alone and ADIOS2 does not tie them to the thread
// that made them; the sink moves to the writer thread before any call.
unsafe impl Send for Writer {}

/// A defined variable.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Var(*mut Variable);
// SAFETY: as for `Writer`, whose IO owns the variable.
unsafe impl Send for Var {}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").field("open", &!self.engine.is_null()).finish()
    }
}

impl Writer {
    /// A serial ADIOS2 instance and an IO named `io` using `engine` (`BP5`, `SST`, ...).
    pub(crate) fn new(io: &str, engine: &str) -> Result<Self, String> {
        let api = api()?;
        // SAFETY: no arguments; returns NULL on failure, checked.
        let adios = unsafe { (api.init_serial)() };
        if adios.is_null() {
            return Err("adios2_init_serial failed".into());
        }
        let mut w = Writer { api, adios, io: std::ptr::null_mut(), engine: std::ptr::null_mut() };
        let name = cstring(io)?;
        // SAFETY: `adios` is a live instance, `name` a NUL-terminated string.
        w.io = unsafe { (api.declare_io)(w.adios, name.as_ptr()) };
        if w.io.is_null() {
            return Err(format!("adios2_declare_io({io:?}) failed"));
        }
        let e = cstring(engine)?;
        // SAFETY: `io` is live, `e` NUL-terminated.
        check(unsafe { (api.set_engine)(w.io, e.as_ptr()) }, || format!("cannot use engine {engine:?}"))?;
        Ok(w)
    }

    /// Sets an engine parameter (`QueueLimit`, `OpenTimeoutSecs`, ...).
    pub(crate) fn set_parameter(&mut self, key: &str, value: &str) -> Result<(), String> {
        let (k, v) = (cstring(key)?, cstring(value)?);
        // SAFETY: `io` is live, both strings NUL-terminated.
        check(unsafe { (self.api.set_parameter)(self.io, k.as_ptr(), v.as_ptr()) }, || {
            format!("cannot set parameter {key} = {value}")
        })
    }

    /// Defines the global array `name` of `shape` (the whole array written by this process),
    /// or a global value when `shape` is empty.
    pub(crate) fn define_variable(&mut self, name: &str, ty: Type, shape: &[usize]) -> Result<Var, String> {
        let n = cstring(name)?;
        let start = vec![0usize; shape.len()];
        let (shape_ptr, start_ptr) =
            if shape.is_empty() { (std::ptr::null(), std::ptr::null()) } else { (shape.as_ptr(), start.as_ptr()) };
        // SAFETY: `io` is live; `shape`, `start` and `count` (= shape) hold `shape.len()`
        // entries each, or are NULL for a value (ndims 0), as the API documents.
        let v = unsafe {
            (self.api.define_variable)(
                self.io,
                n.as_ptr(),
                ty,
                shape.len(),
                shape_ptr,
                start_ptr,
                shape_ptr,
                CONSTANT_DIMS,
            )
        };
        if v.is_null() {
            return Err(format!("cannot define variable {name:?}"));
        }
        Ok(Var(v))
    }

    /// Defines the attribute `name` holding one number of type `ty` (its bytes in `value`).
    pub(crate) fn number_attribute(&mut self, name: &str, ty: Type, value: &[u8]) -> Result<(), String> {
        let n = cstring(name)?;
        let width = match ty {
            TYPE_UINT8 => 1,
            TYPE_FLOAT | TYPE_INT32 => 4,
            TYPE_DOUBLE | TYPE_INT64 | TYPE_UINT64 => 8,
            _ => 0,
        };
        if width == 0 || value.len() != width {
            return Err(format!("attribute {name:?}: {} bytes for type {ty}", value.len()));
        }
        // SAFETY: `io` is live; `value` points to one value of type `ty` (its width checked
        // above), which ADIOS2 copies.
        let a = unsafe { (self.api.define_attribute)(self.io, n.as_ptr(), ty, value.as_ptr().cast()) };
        if a.is_null() { Err(format!("cannot define attribute {name:?}")) } else { Ok(()) }
    }

    /// Defines the text attribute `name`.
    pub(crate) fn text_attribute(&mut self, name: &str, value: &str) -> Result<(), String> {
        let (n, v) = (cstring(name)?, cstring(&value.replace('\0', ""))?);
        // SAFETY: `io` is live; for a string attribute the value is the NUL-terminated text
        // itself, which ADIOS2 copies.
        let a = unsafe { (self.api.define_attribute)(self.io, n.as_ptr(), TYPE_STRING, v.as_ptr().cast()) };
        if a.is_null() { Err(format!("cannot define attribute {name:?}")) } else { Ok(()) }
    }

    /// Opens the engine writing `name` (a BP5 directory, an SST stream's name).
    pub(crate) fn open(&mut self, name: &str) -> Result<(), String> {
        let n = cstring(name)?;
        // SAFETY: `io` is live and `n` NUL-terminated; NULL on failure, checked. An SST
        // writer waits here for its readers, up to the engine's OpenTimeoutSecs.
        self.engine = unsafe { (self.api.open)(self.io, n.as_ptr(), MODE_WRITE) };
        if self.engine.is_null() { Err(format!("cannot open {name:?} for writing")) } else { Ok(()) }
    }

    /// Writes one step: each `(variable, bytes)`, copied before this returns (sync puts).
    pub(crate) fn step(&mut self, puts: &[(Var, &[u8])]) -> Result<(), String> {
        if self.engine.is_null() {
            return Err("the engine is not open".into());
        }
        let mut status: c_int = STEP_STATUS_OK;
        // SAFETY: `engine` is open for writing; `status` is a valid out pointer.
        check(unsafe { (self.api.begin_step)(self.engine, STEP_MODE_APPEND, -1.0, &mut status) }, || {
            "cannot begin a step".to_owned()
        })?;
        if status != STEP_STATUS_OK {
            return Err(format!("cannot begin a step (status {status}: no reader takes it)"));
        }
        for (var, bytes) in puts {
            // SAFETY: `var` was defined in this IO with the shape whose bytes `bytes` holds
            // (the sink checks frames against the layout first); a sync put copies them
            // before it returns.
            check(unsafe { (self.api.put)(self.engine, var.0, bytes.as_ptr().cast(), MODE_SYNC) }, || {
                "cannot put a variable".to_owned()
            })?;
        }
        // SAFETY: a step is open on `engine`.
        check(unsafe { (self.api.end_step)(self.engine) }, || "cannot end the step".to_owned())
    }

    /// Closes the engine (writing BP5's last metadata, ending an SST stream).
    pub(crate) fn close(&mut self) -> Result<(), String> {
        if self.engine.is_null() {
            return Ok(());
        }
        let engine = std::mem::replace(&mut self.engine, std::ptr::null_mut());
        // SAFETY: `engine` is open and closed once (the field is cleared first).
        check(unsafe { (self.api.close)(engine) }, || "cannot close the engine".to_owned())
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.close();
        // SAFETY: `adios` is live and finalised once, here; no handle of it is used after.
        unsafe { (self.api.finalize)(self.adios) };
    }
}

/// `Ok` for `adios2_error_none`, else the message of `what`.
fn check(code: c_int, what: impl FnOnce() -> String) -> Result<(), String> {
    if code == 0 { Ok(()) } else { Err(format!("{} (ADIOS2 error {code})", what())) }
}
