//! The native module of the `wgpipe` Python package (`wgpipe._wgpipe`): a thin binding of the
//! `wgpipe` crate. The package around it (python/wgpipe/) adds what is Python's own: the
//! progress bar, Ctrl-C, xarray.

mod builder;
mod config;
mod errors;
mod frame;
mod kernel;
mod layout;
mod output;
mod prepared;
mod report;
mod run;
mod sink;
mod tap;

use pyo3::prelude::*;

/// The adapters wgpu sees, in the order `devices(select="0,1")` counts them: index, name,
/// backend, type, driver, and whether the default selection (`"all"`) opens it.
#[pyfunction]
fn adapters(py: Python<'_>) -> PyResult<Vec<Bound<'_, pyo3::types::PyDict>>> {
    let adapters = py.detach(wgpipe::compute::list_adapters);
    let picks = wgpipe::compute::default_picks(&adapters);
    adapters
        .iter()
        .zip(picks)
        .map(|(a, pick)| {
            let d = pyo3::types::PyDict::new(py);
            d.set_item("index", a.index)?;
            d.set_item("name", &a.name)?;
            d.set_item("backend", format!("{:?}", a.backend).to_lowercase())?;
            d.set_item("type", format!("{:?}", a.device_type))?;
            d.set_item("driver", &a.driver)?;
            d.set_item("default", pick.is_picked())?;
            Ok(d)
        })
        .collect()
}

/// Whether Mesa's Vulkan display probe should be turned off (`NODEVICE_SELECT=1`) before
/// any device is listed: a headless machine, where it prints `XDG_RUNTIME_DIR` errors. The
/// package sets the variable through `os.environ` when it is imported.
#[pyfunction]
fn display_probe_unwanted() -> bool {
    wgpipe::compute::headless::display_probe_unwanted()
}

/// The module `wgpipe._wgpipe`.
#[pymodule]
fn _wgpipe(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<report::Report>()?;
    m.add_class::<report::DeviceShare>()?;
    m.add_class::<report::AutoChoice>()?;
    m.add_class::<layout::Field>()?;
    m.add_class::<layout::Layout>()?;
    m.add_class::<layout::Stream>()?;
    m.add_class::<frame::PyFrame>()?;
    m.add_class::<sink::SinkOutcome>()?;
    m.add_class::<prepared::Prepared>()?;
    m.add_class::<run::Run>()?;
    m.add_class::<builder::Builder>()?;
    m.add_class::<output::NativeOutput>()?;
    m.add_class::<output::StoredStream>()?;
    m.add_function(wrap_pyfunction!(config::launch_config, m)?)?;
    m.add_function(wrap_pyfunction!(output::open_native, m)?)?;
    m.add_function(wrap_pyfunction!(adapters, m)?)?;
    m.add_function(wrap_pyfunction!(display_probe_unwanted, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
