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
//! wheel the tests use; these functions exist since 2.9, but for
//! `adios2_attribute_string_data`, new in 2.12, which only reading a text attribute needs);
//! only what the sink ([`Writer`]) and the BP5 reader ([`BpReader`]) call is declared.
#![allow(unsafe_code, reason = "calls into ADIOS2's C library; each call's contract is stated where it is made")]

use std::ffi::{CString, c_char, c_float, c_int, c_void};
use std::path::PathBuf;
use std::sync::OnceLock;

use libloading::Library;

use crate::schema::AttrValue;

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
const TYPE_INT8: Type = 5;
const TYPE_INT16: Type = 6;
pub(crate) const TYPE_INT32: Type = 7;
pub(crate) const TYPE_INT64: Type = 8;
pub(crate) const TYPE_UINT8: Type = 9;
pub(crate) const TYPE_UINT16: Type = 10;
pub(crate) const TYPE_UINT32: Type = 11;
pub(crate) const TYPE_UINT64: Type = 12;
/// `adios2_mode`.
const MODE_WRITE: c_int = 1;
const MODE_SYNC: c_int = 5;
const MODE_READ_RANDOM_ACCESS: c_int = 6;
/// `adios2_shapeid`: what a reader finds a variable to be.
const SHAPEID_GLOBAL_VALUE: c_int = 0;
const SHAPEID_GLOBAL_ARRAY: c_int = 1;
/// `adios2_step_mode_append`.
const STEP_MODE_APPEND: c_int = 0;
/// `adios2_step_status_ok`.
const STEP_STATUS_OK: c_int = 0;
/// `adios2_constant_dims_true`.
const CONSTANT_DIMS: c_int = 1;

/// The functions the sink and the reader call, resolved once.
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
    // Reading (`BpReader`).
    inquire_variable: unsafe extern "C" fn(*mut Io, *const c_char) -> *mut Variable,
    variable_type: unsafe extern "C" fn(*mut Type, *const Variable) -> c_int,
    variable_shapeid: unsafe extern "C" fn(*mut c_int, *const Variable) -> c_int,
    variable_ndims: unsafe extern "C" fn(*mut usize, *const Variable) -> c_int,
    variable_shape: unsafe extern "C" fn(*mut usize, *const Variable) -> c_int,
    variable_steps: unsafe extern "C" fn(*mut usize, *const Variable) -> c_int,
    set_selection: unsafe extern "C" fn(*mut Variable, usize, *const usize, *const usize) -> c_int,
    set_step_selection: unsafe extern "C" fn(*mut Variable, usize, usize) -> c_int,
    selection_size: unsafe extern "C" fn(*mut usize, *const Variable) -> c_int,
    get: unsafe extern "C" fn(*mut Engine, *mut Variable, *mut c_void, c_int) -> c_int,
    inquire_all_attributes: unsafe extern "C" fn(*mut *mut *mut Attribute, *mut usize, *mut Io) -> c_int,
    attribute_name: unsafe extern "C" fn(*mut c_char, *mut usize, *const Attribute) -> c_int,
    attribute_type: unsafe extern "C" fn(*mut Type, *const Attribute) -> c_int,
    attribute_is_value: unsafe extern "C" fn(*mut c_int, *const Attribute) -> c_int,
    attribute_data: unsafe extern "C" fn(*mut c_void, *mut usize, *const Attribute) -> c_int,
    /// New in ADIOS2 2.12, so optional: the sink runs without it. The one call that tells a
    /// text attribute's length (`adios2_attribute_data` copies a string into a buffer of a
    /// size it cannot be asked for).
    attribute_string_data: Option<unsafe extern "C" fn(*const Attribute, *mut c_char, *mut usize) -> c_int>,
}

// SAFETY: C's `void free(void *)`, from the C library the standard library links.
unsafe extern "C" {
    /// libc's `free`, for the lists ADIOS2's C API allocates with `calloc` and hands over.
    fn free(ptr: *mut c_void);
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
            inquire_variable: get!("adios2_inquire_variable"),
            variable_type: get!("adios2_variable_type"),
            variable_shapeid: get!("adios2_variable_shapeid"),
            variable_ndims: get!("adios2_variable_ndims"),
            variable_shape: get!("adios2_variable_shape"),
            variable_steps: get!("adios2_variable_steps"),
            set_selection: get!("adios2_set_selection"),
            set_step_selection: get!("adios2_set_step_selection"),
            selection_size: get!("adios2_selection_size"),
            get: get!("adios2_get"),
            inquire_all_attributes: get!("adios2_inquire_all_attributes"),
            attribute_name: get!("adios2_attribute_name"),
            attribute_type: get!("adios2_attribute_type"),
            attribute_is_value: get!("adios2_attribute_is_value"),
            attribute_data: get!("adios2_attribute_data"),
            // SAFETY: as for `get!`: the 2.12 function of that name, declared as in its header.
            attribute_string_data: unsafe { lib.get(b"adios2_attribute_string_data\0") }.ok().map(|f| *f),
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
        let (adios, io) = instance(api, io, engine)?;
        Ok(Writer { api, adios, io, engine: std::ptr::null_mut() })
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

    /// Writes one step: each `(variable, bytes)`, copied before this returns (sync puts), and
    /// the number attributes `attributes` (name, type, value, as [`Writer::number_attribute`]
    /// takes them), defined before the step ends: ADIOS2 writes an attribute with the step
    /// that is open when it is defined, so they travel with this step's variables instead of
    /// needing a step of their own.
    pub(crate) fn step(&mut self, puts: &[(Var, &[u8])], attributes: &[(String, Type, Vec<u8>)]) -> Result<(), String> {
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
        for (name, ty, value) in attributes {
            self.number_attribute(name, *ty, value)?;
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

/// A serial ADIOS2 instance and in it an IO named `io` using `engine`: how a writer and a
/// reader begin. A failure finalises the instance before it returns.
fn instance(api: &'static Api, io: &str, engine: &str) -> Result<(*mut Adios, *mut Io), String> {
    // SAFETY: no arguments; returns NULL on failure, checked.
    let adios = unsafe { (api.init_serial)() };
    if adios.is_null() {
        return Err("adios2_init_serial failed".into());
    }
    let declared = declare(api, adios, io, engine);
    if declared.is_err() {
        // SAFETY: `adios` is live and finalised once, here; nothing of it is used after.
        unsafe { (api.finalize)(adios) };
    }
    declared.map(|io| (adios, io))
}

/// Declares the IO `io` of the live instance `adios` and sets its engine.
fn declare(api: &Api, adios: *mut Adios, io: &str, engine: &str) -> Result<*mut Io, String> {
    let name = cstring(io)?;
    // SAFETY: `adios` is a live instance, `name` a NUL-terminated string.
    let handle = unsafe { (api.declare_io)(adios, name.as_ptr()) };
    if handle.is_null() {
        return Err(format!("adios2_declare_io({io:?}) failed"));
    }
    let e = cstring(engine)?;
    // SAFETY: `handle` is live, `e` NUL-terminated.
    check(unsafe { (api.set_engine)(handle, e.as_ptr()) }, || format!("cannot use engine {engine:?}"))?;
    Ok(handle)
}

/// A BP5 output opened for reading in random access (`adios2_mode_readRandomAccess`): the
/// engine reads every step's metadata when it opens, so each variable offers all its steps
/// at once, and a directory whose writer was killed opens with the steps it completed (the
/// index lists only those; random access waits for no more).
///
/// Owned by one thread at a time: selections are state of the variables, so a read sets
/// them and gets in one `&mut self` call.
pub(crate) struct BpReader {
    api: &'static Api,
    adios: *mut Adios,
    io: *mut Io,
    engine: *mut Engine,
}

// SAFETY: as for `Writer`: the handles belong to this reader alone, and ADIOS2 does not tie
// them to the thread that made them.
unsafe impl Send for BpReader {}

impl std::fmt::Debug for BpReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BpReader").finish_non_exhaustive()
    }
}

/// A variable of the file: its handle, ADIOS2 type, shape (empty for a global value) and the
/// number of steps that hold it.
#[derive(Debug, Clone)]
pub(crate) struct VarInfo {
    var: Var,
    pub(crate) ty: Type,
    pub(crate) shape: Vec<usize>,
    pub(crate) steps: u64,
}

/// Bytes of one element of the numeric type `ty`; `None` for text and types wgpipe never
/// writes (complex, long double).
pub(crate) fn type_width(ty: Type) -> Option<usize> {
    match ty {
        TYPE_INT8 | TYPE_UINT8 => Some(1),
        TYPE_INT16 | TYPE_UINT16 => Some(2),
        TYPE_FLOAT | TYPE_INT32 | TYPE_UINT32 => Some(4),
        TYPE_DOUBLE | TYPE_INT64 | TYPE_UINT64 => Some(8),
        _ => None,
    }
}

/// The value of a numeric attribute of type `ty` from its bytes (native order).
fn number(ty: Type, b: [u8; 8]) -> Option<AttrValue> {
    let [b0, b1, b2, b3, ..] = b;
    Some(match ty {
        TYPE_INT8 => AttrValue::Int(i8::from_ne_bytes([b0]).into()),
        TYPE_UINT8 => AttrValue::Int(b0.into()),
        TYPE_INT16 => AttrValue::Int(i16::from_ne_bytes([b0, b1]).into()),
        TYPE_UINT16 => AttrValue::Int(u16::from_ne_bytes([b0, b1]).into()),
        TYPE_INT32 => AttrValue::Int(i32::from_ne_bytes([b0, b1, b2, b3]).into()),
        TYPE_UINT32 => AttrValue::Int(u32::from_ne_bytes([b0, b1, b2, b3]).into()),
        TYPE_INT64 => AttrValue::Int(i64::from_ne_bytes(b)),
        TYPE_UINT64 => AttrValue::from(u64::from_ne_bytes(b)),
        TYPE_FLOAT => AttrValue::Float32(f32::from_ne_bytes([b0, b1, b2, b3])),
        TYPE_DOUBLE => AttrValue::Float(f64::from_ne_bytes(b)),
        _ => return None,
    })
}

impl BpReader {
    /// Opens the BP5 directory `path` for reading.
    pub(crate) fn open(path: &str) -> Result<Self, String> {
        let api = api()?;
        let (adios, io) = instance(api, "wgpipe-read", "BP5")?;
        let mut r = BpReader { api, adios, io, engine: std::ptr::null_mut() };
        let p = cstring(path)?;
        // SAFETY: `io` is live and `p` NUL-terminated; NULL on failure, checked.
        r.engine = unsafe { (api.open)(r.io, p.as_ptr(), MODE_READ_RANDOM_ACCESS) };
        if r.engine.is_null() { Err(format!("cannot open {path:?} for reading")) } else { Ok(r) }
    }

    /// Every attribute of the file (of all its steps), by name.
    pub(crate) fn attributes(&self) -> Result<Vec<(String, AttrValue)>, String> {
        let mut list: *mut *mut Attribute = std::ptr::null_mut();
        let mut n = 0usize;
        // SAFETY: `io` is live and both out pointers valid; ADIOS2 allocates the list
        // (calloc) and hands it over.
        check(unsafe { (self.api.inquire_all_attributes)(&mut list, &mut n, self.io) }, || {
            "cannot list the attributes".to_owned()
        })?;
        let handles: Vec<*mut Attribute> = if list.is_null() || n == 0 {
            Vec::new()
        } else {
            // SAFETY: `list` holds `n` entries (NULL for a type the C API skips), read
            // before it is freed below.
            unsafe { std::slice::from_raw_parts(list, n) }.to_vec()
        };
        // SAFETY: `list` came from ADIOS2's calloc (or is NULL) and is freed once, here.
        unsafe { free(list.cast()) };
        handles.into_iter().filter(|a| !a.is_null()).map(|a| self.attribute(a)).collect()
    }

    /// The name and value of the attribute `a` of this IO.
    fn attribute(&self, a: *mut Attribute) -> Result<(String, AttrValue), String> {
        let name = self.attribute_name(a)?;
        let (mut ty, mut single): (Type, c_int) = (-1, 0);
        // SAFETY: `a` is an attribute of this IO; the out pointers are valid.
        check(unsafe { (self.api.attribute_type)(&mut ty, a) }, || format!("attribute {name:?}: no type"))?;
        // SAFETY: as above.
        check(unsafe { (self.api.attribute_is_value)(&mut single, a) }, || format!("attribute {name:?}: no size"))?;
        if single != 1 {
            return Err(format!("attribute {name:?} is an array, which wgpipe does not write"));
        }
        if ty == TYPE_STRING {
            return Ok((name, AttrValue::Text(self.text(a)?)));
        }
        if type_width(ty).is_none() {
            return Err(format!("attribute {name:?} is of ADIOS2 type {ty}, which wgpipe does not write"));
        }
        let mut buf = [0u64; 1];
        let mut size = 0usize;
        // SAFETY: `a` holds one value of type `ty`, at most 8 bytes wide (checked above),
        // which ADIOS2 stores into `buf` (8 bytes, aligned for any such type).
        check(unsafe { (self.api.attribute_data)(buf.as_mut_ptr().cast(), &mut size, a) }, || {
            format!("cannot read attribute {name:?}")
        })?;
        let value = number(ty, buf[0].to_ne_bytes()).ok_or_else(|| format!("attribute {name:?}: type {ty}"))?;
        Ok((name, value))
    }

    /// The name of attribute `a` (asked for its length first, as the header says).
    fn attribute_name(&self, a: *mut Attribute) -> Result<String, String> {
        let mut len = 0usize;
        // SAFETY: `a` is an attribute of this IO; a NULL buffer asks only for the length.
        check(unsafe { (self.api.attribute_name)(std::ptr::null_mut(), &mut len, a) }, || {
            "cannot read an attribute's name".to_owned()
        })?;
        let mut buf = vec![0u8; len];
        // SAFETY: `buf` holds the `len` bytes of the name, which ADIOS2 copies (no NUL).
        check(unsafe { (self.api.attribute_name)(buf.as_mut_ptr().cast(), &mut len, a) }, || {
            "cannot read an attribute's name".to_owned()
        })?;
        buf.truncate(len);
        String::from_utf8(buf).map_err(|e| format!("an attribute's name is not UTF-8: {e}"))
    }

    /// The text of the single-value string attribute `a`.
    fn text(&self, a: *mut Attribute) -> Result<String, String> {
        let f = self.api.attribute_string_data.ok_or_else(|| {
            "reading a text attribute needs ADIOS2 2.12 or later (adios2_attribute_string_data): install a newer \
             adios2 wheel (pip install -U adios2) and point WGPIPE_ADIOS2_LIB at its libadios2_c.so"
                .to_owned()
        })?;
        let mut len = 0usize;
        // SAFETY: `a` is a single-value string attribute of this IO; a NULL buffer asks only
        // for the length.
        check(unsafe { f(a, std::ptr::null_mut(), &mut len) }, || "cannot read a text attribute".to_owned())?;
        let mut buf = vec![0u8; len];
        // SAFETY: `buf` holds the `len` bytes of the text, which ADIOS2 copies (no NUL).
        check(unsafe { f(a, buf.as_mut_ptr().cast(), &mut len) }, || "cannot read a text attribute".to_owned())?;
        buf.truncate(len);
        String::from_utf8(buf).map_err(|e| format!("a text attribute is not UTF-8: {e}"))
    }

    /// The variable `name`, or `None` when no step of the file holds it.
    pub(crate) fn variable(&self, name: &str) -> Result<Option<VarInfo>, String> {
        let n = cstring(name)?;
        // SAFETY: `io` is live and `n` NUL-terminated; NULL when there is no such variable.
        let v = unsafe { (self.api.inquire_variable)(self.io, n.as_ptr()) };
        if v.is_null() {
            return Ok(None);
        }
        let fail = || format!("cannot inquire variable {name:?}");
        let (mut ty, mut shapeid, mut steps): (Type, c_int, usize) = (-1, -1, 0);
        // SAFETY: `v` is a variable of this IO; each out pointer is valid.
        check(unsafe { (self.api.variable_type)(&mut ty, v) }, fail)?;
        // SAFETY: as above.
        check(unsafe { (self.api.variable_shapeid)(&mut shapeid, v) }, fail)?;
        // SAFETY: as above.
        check(unsafe { (self.api.variable_steps)(&mut steps, v) }, fail)?;
        let shape = match shapeid {
            SHAPEID_GLOBAL_VALUE => Vec::new(),
            SHAPEID_GLOBAL_ARRAY => self.shape(v, name)?,
            other => return Err(format!("variable {name:?} is not a global array or value (shape id {other})")),
        };
        Ok(Some(VarInfo { var: Var(v), ty, shape, steps: steps as u64 }))
    }

    /// The shape of the global array `v`.
    fn shape(&self, v: *mut Variable, name: &str) -> Result<Vec<usize>, String> {
        let mut ndims = 0usize;
        // SAFETY: `v` is a variable of this IO; the out pointer is valid.
        check(unsafe { (self.api.variable_ndims)(&mut ndims, v) }, || format!("variable {name:?}: no rank"))?;
        let mut shape = vec![0usize; ndims];
        // SAFETY: `shape` holds `ndims` entries, the length of the variable's count, which
        // BP5's reader makes a global array's shape (BP5Deserializer: count = shape, same
        // rank; selections keep the rank), so as many as the shape ADIOS2 copies.
        check(unsafe { (self.api.variable_shape)(shape.as_mut_ptr(), v) }, || format!("variable {name:?}: no shape"))?;
        Ok(shape)
    }

    /// The bytes of steps `first .. first + steps` of `v` (steps counted among those that
    /// hold it), the whole shape of each, in order, little-endian (ADIOS2 gives the host's
    /// order).
    pub(crate) fn read(&mut self, v: &VarInfo, first: u64, steps: u64) -> Result<Vec<u8>, String> {
        let width = type_width(v.ty).ok_or_else(|| format!("a variable of ADIOS2 type {}", v.ty))?;
        let index = |n: u64| usize::try_from(n).map_err(|_| format!("step {n} is past what this machine addresses"));
        let (first, count) = (index(first)?, index(steps)?);
        let elements = v.shape.iter().try_fold(count, |n, &d| n.checked_mul(d)).ok_or("the selection overflows")?;
        let bytes = elements.checked_mul(width).ok_or("the selection overflows")?;
        let start = vec![0usize; v.shape.len()];
        if !v.shape.is_empty() {
            // SAFETY: `v` is a global array of this IO of rank `shape.len()`; `start` and
            // `shape` hold that many entries.
            check(
                unsafe { (self.api.set_selection)(v.var.0, v.shape.len(), start.as_ptr(), v.shape.as_ptr()) },
                || "cannot select the whole array".to_owned(),
            )?;
        }
        // SAFETY: `v` is a variable of this IO.
        check(unsafe { (self.api.set_step_selection)(v.var.0, first, count) }, || {
            format!("cannot select steps {first}..{}", first.saturating_add(count))
        })?;
        let mut out = self.get(v, elements, bytes)?;
        if cfg!(target_endian = "big") {
            out.chunks_exact_mut(width).for_each(<[u8]>::reverse);
        }
        Ok(out)
    }

    /// Gets the selection of `v`, which must be `elements` elements (`bytes` bytes).
    fn get(&mut self, v: &VarInfo, elements: usize, bytes: usize) -> Result<Vec<u8>, String> {
        let mut selected = 0usize;
        // SAFETY: `v` is a variable of this IO; the out pointer is valid.
        check(unsafe { (self.api.selection_size)(&mut selected, v.var.0) }, || "no selection size".to_owned())?;
        if selected != elements {
            return Err(format!("the selection holds {selected} elements, {elements} expected"));
        }
        // u64s: aligned for every element type.
        let mut buf = vec![0u64; bytes.div_ceil(8)];
        // SAFETY: `engine` is open for reading and `v` one of its IO's variables; `buf` holds
        // at least `bytes` bytes, the `selected` elements of `v`'s type a sync get stores
        // before it returns.
        check(unsafe { (self.api.get)(self.engine, v.var.0, buf.as_mut_ptr().cast(), MODE_SYNC) }, || {
            "cannot get the selection".to_owned()
        })?;
        let mut out: Vec<u8> = bytemuck::cast_slice(&buf).to_vec();
        out.truncate(bytes);
        Ok(out)
    }
}

impl Drop for BpReader {
    fn drop(&mut self) {
        if !self.engine.is_null() {
            // SAFETY: `engine` is open and closed once, here.
            unsafe { (self.api.close)(self.engine) };
        }
        // SAFETY: `adios` is live and finalised once, here; no handle of it is used after.
        unsafe { (self.api.finalize)(self.adios) };
    }
}

/// `Ok` for `adios2_error_none`, else the message of `what`.
fn check(code: c_int, what: impl FnOnce() -> String) -> Result<(), String> {
    if code == 0 { Ok(()) } else { Err(format!("{} (ADIOS2 error {code})", what())) }
}
