//! Compute pipelines as every pass of this crate makes them: one WGSL module, its buffers in
//! bind group 0 (one layout its pipelines share), and one pipeline per entry point.

/// A compiled WGSL compute shader with the layout of its bind group 0: what the pipelines of
/// one pass ([`ComputeShader::pipeline`]) and their bind groups
/// ([`ComputeShader::group_layout`]) are made from.
pub(crate) struct ComputeShader {
    module: wgpu::ShaderModule,
    group: wgpu::BindGroupLayout,
    layout: wgpu::PipelineLayout,
}

impl ComputeShader {
    /// Compiles `source` on `device` with bind group 0 holding `buffers` (each a binding and
    /// the kind of buffer bound there, seen by the compute stage) and `immediate_size` bytes
    /// of immediate data; the module and the layouts are labelled `label`.
    pub(crate) fn new(
        device: &wgpu::Device,
        label: &str,
        source: &str,
        buffers: &[(u32, wgpu::BufferBindingType)],
        immediate_size: u32,
    ) -> Self {
        let module = wgsl_module(device, label, source);
        let entries: Vec<wgpu::BindGroupLayoutEntry> =
            buffers.iter().map(|&(binding, ty)| buffer_entry(binding, ty)).collect();
        let group =
            device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some(label), entries: &entries });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(label),
            bind_group_layouts: &[Some(&group)],
            immediate_size,
        });
        ComputeShader { module, group, layout }
    }

    /// The pipeline of the shader's `entry_point`, labelled `label`, with the values of its
    /// overridable `constants`.
    pub(crate) fn pipeline(
        &self,
        device: &wgpu::Device,
        label: &str,
        entry_point: &str,
        constants: &[(&str, f64)],
    ) -> wgpu::ComputePipeline {
        compute_pipeline(device, &self.module, Some(&self.layout), label, entry_point, constants)
    }

    /// The layout of bind group 0, which every bind group of its pipelines is made with.
    pub(crate) fn group_layout(&self) -> &wgpu::BindGroupLayout {
        &self.group
    }
}

/// A storage buffer binding, read-only or read-write.
pub(crate) fn storage(read_only: bool) -> wgpu::BufferBindingType {
    wgpu::BufferBindingType::Storage { read_only }
}

/// The layout entry of a buffer of kind `ty` at `binding`, seen by the compute stage.
fn buffer_entry(binding: u32, ty: wgpu::BufferBindingType) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer { ty, has_dynamic_offset: false, min_binding_size: None },
        count: None,
    }
}

/// The WGSL `source` compiled on `device`, labelled `label`.
pub(crate) fn wgsl_module(device: &wgpu::Device, label: &str, source: &str) -> wgpu::ShaderModule {
    device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(label),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    })
}

/// The compute pipeline of `module`'s `entry_point` with `layout` (`None`: the layout wgpu
/// derives from the shader, whose bind groups then take `get_bind_group_layout`), labelled
/// `label`, with the values of its overridable `constants`.
pub(crate) fn compute_pipeline(
    device: &wgpu::Device,
    module: &wgpu::ShaderModule,
    layout: Option<&wgpu::PipelineLayout>,
    label: &str,
    entry_point: &str,
    constants: &[(&str, f64)],
) -> wgpu::ComputePipeline {
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(label),
        layout,
        module,
        entry_point: Some(entry_point),
        compilation_options: wgpu::PipelineCompilationOptions { constants, ..Default::default() },
        cache: None,
    })
}
