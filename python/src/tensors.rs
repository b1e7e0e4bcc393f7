//! numpy arrays in and out. An input is copied once, into tract's aligned buffer (tract's tensors own
//! their memory); an output is not copied: the array views the output's buffer, which a [`Buffer`]
//! (the array's `base`) keeps alive.

use numpy::{dtype, Element, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use sliceops::npy::numpy_name;
use sliceops::tract_onnx::prelude::*;

/// Owns an output tensor whose buffer numpy arrays view.
#[pyclass(frozen, module = "sliceops._sliceops")]
pub struct Buffer {
    tensor: Tensor,
}

/// Calls `$body` with `$T` bound to the Rust type of a numpy/tract element type.
macro_rules! dispatch {
    ($dt:expr, $T:ident => $body:expr, else $other:expr) => {
        match $dt {
            DatumType::Bool => {
                type $T = bool;
                $body
            }
            DatumType::U8 => {
                type $T = u8;
                $body
            }
            DatumType::U16 => {
                type $T = u16;
                $body
            }
            DatumType::U32 => {
                type $T = u32;
                $body
            }
            DatumType::U64 => {
                type $T = u64;
                $body
            }
            DatumType::I8 => {
                type $T = i8;
                $body
            }
            DatumType::I16 => {
                type $T = i16;
                $body
            }
            DatumType::I32 => {
                type $T = i32;
                $body
            }
            DatumType::I64 => {
                type $T = i64;
                $body
            }
            DatumType::F16 => {
                type $T = half::f16;
                $body
            }
            DatumType::F32 => {
                type $T = f32;
                $body
            }
            DatumType::F64 => {
                type $T = f64;
                $body
            }
            _ => $other,
        }
    };
}

/// The element types that cross between numpy and tract.
const TYPES: [DatumType; 12] = [
    DatumType::Bool,
    DatumType::U8,
    DatumType::U16,
    DatumType::U32,
    DatumType::U64,
    DatumType::I8,
    DatumType::I16,
    DatumType::I32,
    DatumType::I64,
    DatumType::F16,
    DatumType::F32,
    DatumType::F64,
];

fn typed<'py, T: Element + Datum + Copy>(array: &Bound<'py, PyUntypedArray>) -> PyResult<Tensor> {
    let array = array.cast::<PyArrayDyn<T>>()?;
    let ro = array.try_readonly().map_err(|e| PyValueError::new_err(e.to_string()))?;
    let view = ro.as_array();
    let tensor = match ro.as_slice() {
        Ok(flat) => Tensor::from_shape(view.shape(), flat),
        Err(_) => Ok(Tensor::from(view.to_owned())),
    };
    tensor.map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Copies a numpy array into a tensor of the same element type and shape.
pub fn to_tensor(name: &str, value: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let py = value.py();
    let array = value
        .cast::<PyUntypedArray>()
        .map_err(|_| PyValueError::new_err(format!("input '{name}' is not a numpy array")))?;
    let descr = array.dtype();
    for dt in TYPES {
        let found = dispatch!(dt, T => descr.is_equiv_to(&dtype::<T>(py)), else false);
        if found {
            return dispatch!(dt, T => typed::<T>(array), else unreachable!());
        }
    }
    Err(PyValueError::new_err(format!(
        "input '{name}' has the numpy dtype {}, which sliceops cannot run (it runs bool, integers and floats)",
        descr.str().map(|s| s.to_string()).unwrap_or_else(|_| "?".into())
    )))
}

/// A numpy array over an output tensor's buffer (no copy).
pub fn to_numpy<'py>(py: Python<'py>, name: &str, tensor: Tensor) -> PyResult<Bound<'py, PyAny>> {
    let dt = tensor.datum_type();
    let owner = Bound::new(py, Buffer { tensor })?;
    let t = &owner.get().tensor;
    dispatch!(dt, T => {
        let view = t.to_plain_array_view::<T>().map_err(|e| PyValueError::new_err(e.to_string()))?;
        // Safety: the array's base is `owner`, which owns the tensor; a frozen pyclass never hands out
        // `&mut`, so the buffer is neither moved nor reallocated while any array views it.
        let array = unsafe { PyArrayDyn::<T>::borrow_from_array(&view, owner.clone().into_any()) };
        Ok(array.into_any())
    }, else Err(PyValueError::new_err(format!(
        "output '{name}' is {}, which numpy arrays from sliceops cannot hold",
        numpy_name(dt)
    ))))
}
