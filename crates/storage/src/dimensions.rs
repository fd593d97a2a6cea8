//! The dimension names of a layout's axes, one rule for every backend that names them (the
//! HDF5 sink's netCDF-4 dimensions, the Zarr sink's `dimension_names`), so that xarray sees
//! the same dataset whichever wrote it.
//!
//! The frame axis is `time`. Every other axis is named by its field's `dims` (`x`; `y, x`;
//! `z, y, x`), shared by all fields that agree on its length: xarray refuses one name with two
//! lengths in a dataset. A name is the axis name unless it is taken (by a field, `steps`, or
//! another length for the same axis name); then it gets a suffix (`x_32`, `time_dim`), and the
//! field's own `dims` still name its axes as given.

use std::collections::{BTreeMap, BTreeSet};

use crate::schema::StreamLayout;
use crate::validate::STEPS_NAME;

/// Preferred name of the frame axis's dimension.
pub(crate) const TIME_DIM: &str = "time";
/// The dimension names of a layout, the same in every stream group.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Dimensions {
    /// The frame axis's dimension.
    pub time: String,
    /// Name and length of every other dimension, in first-use order.
    pub axes: Vec<(String, usize)>,
    /// Per field, the index in `axes` of each of its axes.
    pub of_field: Vec<Vec<usize>>,
}

impl Dimensions {
    /// Names every dimension of `layout` (rules in the module doc).
    pub(crate) fn of(layout: &StreamLayout) -> Self {
        let mut taken: BTreeSet<String> = layout.fields.iter().map(|f| f.name.clone()).collect();
        taken.insert(STEPS_NAME.to_owned());
        let unique = |base: String, taken: &mut BTreeSet<String>| {
            let mut name = base;
            while taken.contains(&name) {
                name.push_str("_dim");
            }
            taken.insert(name.clone());
            name
        };
        let time = unique(TIME_DIM.to_owned(), &mut taken);
        // Lengths each axis name has across the fields: one length keeps the bare name.
        let mut lengths: BTreeMap<&str, BTreeSet<usize>> = BTreeMap::new();
        for f in &layout.fields {
            for (d, &n) in f.dims.iter().zip(&f.shape) {
                lengths.entry(d.as_str()).or_default().insert(n);
            }
        }
        let mut axes: Vec<(String, usize)> = Vec::new();
        let mut by_key: BTreeMap<(&str, usize), usize> = BTreeMap::new();
        let mut of_field = Vec::with_capacity(layout.fields.len());
        for f in &layout.fields {
            let mut ids = Vec::with_capacity(f.shape.len());
            for (d, &n) in f.dims.iter().zip(&f.shape) {
                let id = *by_key.entry((d.as_str(), n)).or_insert_with(|| {
                    let shared = lengths.get(d.as_str()).is_none_or(|l| l.len() == 1);
                    let base = if shared { d.clone() } else { format!("{d}_{n}") };
                    axes.push((unique(base, &mut taken), n));
                    axes.len() - 1
                });
                ids.push(id);
            }
            of_field.push(ids);
        }
        Dimensions { time, axes, of_field }
    }

    /// The dimension names of field `i`, the frame axis first.
    #[cfg(any(test, feature = "zarr"))]
    pub(crate) fn names_of(&self, i: usize) -> Vec<&str> {
        std::iter::once(self.time.as_str())
            .chain(self.of_field.get(i).into_iter().flatten().map(|&a| self.axes[a].0.as_str()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::DType;
    use crate::schema::FieldSpec;

    #[test]
    fn axes_of_one_length_share_a_dimension_and_clashes_get_suffixes() {
        let l = StreamLayout::new(vec![
            FieldSpec::new("u", DType::F32, [4, 8]),
            FieldSpec::new("v", DType::F32, [4, 8]),
            FieldSpec::new("small", DType::F32, [2, 8]),
        ]);
        let d = Dimensions::of(&l);
        assert_eq!(d.time, "time");
        assert_eq!(d.axes, [("y_4".to_owned(), 4), ("x".to_owned(), 8), ("y_2".to_owned(), 2)]);
        assert_eq!(d.names_of(0), ["time", "y_4", "x"]);
        assert_eq!(d.names_of(2), ["time", "y_2", "x"]);
    }

    #[test]
    fn dimension_names_never_take_a_field_or_the_steps_name() {
        let l = StreamLayout::new(vec![
            FieldSpec::new("time", DType::U8, [3]),
            FieldSpec::new("x", DType::U8, [5, 3]).with_dims(["steps", "x"]),
        ]);
        let d = Dimensions::of(&l);
        assert_eq!(d.time, "time_dim");
        assert_eq!(d.names_of(0), ["time_dim", "x_dim"]);
        assert_eq!(d.names_of(1), ["time_dim", "steps_dim", "x_dim"]);
    }
}
