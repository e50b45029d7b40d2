// The Python module `gpusort`: sort_file over files and sort over a numpy array, through the
// library the gpusort command uses, with the GIL released while a sort runs.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cli/cli_options.hpp"
#include "gpusort/error.hpp"
#include "gpusort/options.hpp"
#include "gpusort/record_format.hpp"
#include "gpusort/sort.hpp"
#include "gpusort/stats.hpp"
#include "gpusort/version.hpp"

namespace py = pybind11;

namespace {

/// A message as a Python str; bytes of a file name that are not UTF-8 become U+FFFD.
py::object message_text(const char* message) {
  return py::reinterpret_steal<py::object>(
      PyUnicode_DecodeUTF8(message, static_cast<Py_ssize_t>(std::strlen(message)), "replace"));
}

// --- sort_file's keyword arguments -------------------------------------------------------------

/// A keyword argument of sort_file and the long option of the gpusort command it stands for.
struct keyword {
  std::string_view python;  ///< the keyword: the option with '_' for '-', or a sort_options field
  std::string_view option;  ///< the command's long option
  bool is_switch;           ///< takes True/False instead of a value
};

// The command's options that make sense for a sort called from Python (not --check, --output,
// --stats: sort_file returns the stats; not --no-fork: the command's own process), spelled as
// the command spells them, and the fields of gpusort::sort_options where those differ. `merge`
// is the command's --merge (-m: the inputs are sorted already), not the merge_location field,
// which is merge_on.
constexpr keyword keywords[] = {
    {"type", "type", false},
    {"record_size", "record-size", false},
    {"key_offset", "key-offset", false},
    {"format", "format", false},
    {"reverse", "reverse", true},
    {"descending", "reverse", true},
    {"stable", "stable", true},
    {"unique", "unique", true},
    {"merge", "merge", true},
    {"merge_only", "merge", true},
    {"buffer_size", "buffer-size", false},
    {"buffer_bytes", "buffer-size", false},
    {"temporary_directory", "temporary-directory", false},
    {"temp_dir", "temporary-directory", false},
    {"parallel", "parallel", false},
    {"threads", "parallel", false},
    {"devices", "devices", false},
    {"algorithm", "algorithm", false},
    {"algo", "algorithm", false},
    {"gpu_memory", "gpu-memory", false},
    {"gpu_memory_bytes", "gpu-memory", false},
    {"merge_on", "merge-on", false},
    {"direct_io", "direct-io", false},
    {"direct", "direct-io", false},
    {"key", "key", false},
    {"fsync", "fsync", true},
    {"trace", "trace", false},
    {"trace_path", "trace", false},
    {"verbose", "verbose", true},
    {"progress", "progress", true},
};

const keyword& find_keyword(const std::string& name) {
  for (const keyword& k : keywords)
    if (k.python == name) return k;
  throw py::type_error("sort_file() got an unexpected keyword argument '" + name + "'");
}

/// A path's bytes: str, bytes or os.PathLike, as open() takes it (os.fsencode: a file name
/// that is not UTF-8 comes back as it was).
std::string path_text(const py::handle& value) {
  return py::module_::import("os").attr("fsencode")(value).cast<std::string>();
}

/// An int, or anything numpy.int64 included that stands for one (__index__), but not a bool.
bool is_integer(const py::handle& value) {
  return PyIndex_Check(value.ptr()) != 0 && !PyBool_Check(value.ptr());
}

std::string integer_text(const py::handle& value) {
  return py::str(py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()))).cast<std::string>();
}

bool is_path_like(const py::handle& value) {
  return py::isinstance<py::str>(value) || py::isinstance<py::bytes>(value) ||
         py::hasattr(value, "__fspath__");
}

/// The text of one option's value: a str (or path), an int, or for devices a list of ints.
std::string option_value(const keyword& k, const py::handle& value) {
  const std::string where = "sort_file(): " + std::string(k.python);
  if (py::isinstance<py::bool_>(value))
    throw py::type_error(where + " takes a value, not True or False");
  if (is_integer(value)) return integer_text(value);
  if (is_path_like(value)) return path_text(value);
  const bool sequence = py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value);
  if (k.option == "devices" && sequence) {
    std::string ids;
    for (const py::handle id : value) {
      if (!is_integer(id)) throw py::type_error(where + ": device ids are ints");
      if (!ids.empty()) ids += ',';
      ids += integer_text(id);
    }
    return ids;
  }
  throw py::type_error(where + " must be a str or an int, not " +
                       py::str(py::type::of(value).attr("__name__")).cast<std::string>());
}

/// The inputs: one path or a list (tuple) of them.
std::vector<std::string> input_paths(const py::handle& inputs) {
  std::vector<std::string> paths;
  if (is_path_like(inputs)) {
    paths.push_back(path_text(inputs));
  } else if (py::isinstance<py::list>(inputs) || py::isinstance<py::tuple>(inputs)) {
    for (const py::handle input : inputs) {
      if (!is_path_like(input))
        throw py::type_error("sort_file(): inputs are paths (str, bytes or os.PathLike)");
      paths.push_back(path_text(input));
    }
  } else {
    throw py::type_error("sort_file(): inputs is a path or a list of paths");
  }
  if (paths.empty()) throw py::value_error("sort_file(): no inputs");
  return paths;
}

/**
 * The keyword arguments read by the gpusort command's own parser, as the command line
 * `gpusort --output=OUTPUT --KEYWORD=VALUE... -- INPUT...`: the options are spelled, checked
 * and combined exactly as the command does it. None leaves an option at its default.
 * @throw ValueError (through gpusort::error) for a value the command refuses.
 */
gpusort::cli::request parse_keywords(const std::vector<std::string>& inputs,
                                     const std::string& output, const py::kwargs& kwargs) {
  std::vector<std::string> args = {"gpusort", "--output=" + output};
  std::set<std::string_view> given;  // options, whichever of their names spelled them
  for (const auto& [name, value] : kwargs) {
    const keyword& k = find_keyword(py::str(name).cast<std::string>());
    if (!given.insert(k.option).second)
      throw py::type_error("sort_file(): two keywords name the option --" + std::string(k.option));
    if (value.is_none()) continue;
    if (k.is_switch) {
      if (!py::isinstance<py::bool_>(value))
        throw py::type_error("sort_file(): " + std::string(k.python) + " takes True or False");
      if (value.cast<bool>()) args.push_back("--" + std::string(k.option));
    } else {
      args.push_back("--" + std::string(k.option) + "=" + option_value(k, value));
    }
  }
  args.push_back("--");
  args.insert(args.end(), inputs.begin(), inputs.end());
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  try {
    return gpusort::cli::parse_command_line(static_cast<int>(argv.size()), argv.data());
  } catch (const gpusort::error& e) {
    PyErr_SetObject(PyExc_ValueError,
                    message_text((std::string("sort_file(): ") + e.what()).c_str()).ptr());
    throw py::error_already_set();
  }
}

/// The stats as a dict: the fields of gpusort::sort_stats, read back from the JSON that
/// --stats=json prints (one writer for both).
py::dict stats_dict(const gpusort::sort_stats& stats) {
  return py::module_::import("json").attr("loads")(stats.to_json());
}

// --- sort's array --------------------------------------------------------------------------------

/// The key type of a numpy scalar dtype gpusort sorts ("u32", ...; "bytes:N" for S and V
/// fields of structured records), or "" when there is none.
std::string key_type_of(const py::dtype& dtype, bool field) {
  const char kind = dtype.kind();
  const auto size = static_cast<std::size_t>(dtype.itemsize());
  if ((kind == 'u' || kind == 'i' || kind == 'f') && (size == 4 || size == 8))
    return std::string(1, kind) + (size == 4 ? "32" : "64");
  if (field && (kind == 'S' || kind == 'V') && !dtype.has_fields() && size >= 1 && size <= 4096 &&
      py::len(dtype.attr("shape")) == 0)
    return "bytes:" + std::to_string(size);
  return "";
}

/// Big-endian data would sort by the wrong bytes: gpusort's numeric keys are little-endian.
void expect_native_order(const py::dtype& dtype, const std::string& what) {
  if (py::str(dtype.attr("byteorder")).cast<std::string>() == ">")
    throw py::value_error("sort(): " + what + " is big-endian; gpusort sorts little-endian keys "
                          "(convert with array.astype(array.dtype.newbyteorder('<')))");
}

std::string dtype_name(const py::dtype& dtype) {
  return py::str(static_cast<py::handle>(dtype)).cast<std::string>();
}

/// The record format of `array`'s rows, keyed by the field `key` for structured dtypes.
gpusort::record_format array_format(const py::dtype& dtype, const py::object& key) {
  gpusort::record_format format;
  if (dtype.attr("hasobject").cast<bool>())
    throw py::type_error("sort(): cannot sort an array of Python objects (dtype " +
                         dtype_name(dtype) + ")");
  if (!dtype.has_fields()) {
    if (!key.is_none()) throw py::type_error("sort(): key= names a field of a structured array");
    const std::string type = key_type_of(dtype, false);
    if (type.empty())
      throw py::type_error("sort(): unsupported dtype " + dtype_name(dtype) +
                           " (gpusort sorts uint32, uint64, int32, int64, float32, float64, or "
                           "structured records by one such field: key='name')");
    expect_native_order(dtype, "dtype " + dtype_name(dtype));
    gpusort::set_key_type(format, type);
    return format;
  }
  if (key.is_none() || !py::isinstance<py::str>(key))
    throw py::type_error("sort(): a structured array needs key='field' naming the sort key");
  const std::string name = key.cast<std::string>();
  const py::dict fields = dtype.attr("fields");
  if (!fields.contains(name)) throw py::value_error("sort(): dtype has no field '" + name + "'");
  const py::tuple field = fields[name.c_str()];
  const py::dtype field_dtype = field[0].cast<py::dtype>();
  const std::string type = key_type_of(field_dtype, true);
  if (type.empty())
    throw py::type_error("sort(): field '" + name + "' has dtype " + dtype_name(field_dtype) +
                         " (a key is uint32, uint64, int32, int64, float32, float64 or bytes)");
  expect_native_order(field_dtype, "field '" + name + "'");
  gpusort::set_key_type(format, type);
  format.record_size = static_cast<std::uint32_t>(dtype.itemsize());
  format.key_offset = field[1].cast<std::uint32_t>();
  return format;
}

/**
 * Sorts a 1-D, C-contiguous, writable numpy array in place.
 * @throw TypeError for a dtype gpusort does not sort, ValueError for an array it cannot sort
 * in place (another shape, a view with strides, read-only, big-endian).
 */
void sort_array(const py::object& object, bool reverse, const py::object& key,
                const py::object& parallel) {
  if (!py::isinstance<py::array>(object))
    throw py::type_error("sort(): expected a numpy.ndarray, not " +
                         py::str(py::type::of(object).attr("__name__")).cast<std::string>());
  py::array array = py::reinterpret_borrow<py::array>(object);
  if (array.ndim() != 1)
    throw py::value_error("sort(): expected a 1-D array, not " + std::to_string(array.ndim()) +
                          "-D (sort a flattened copy, or rows as a structured dtype)");
  gpusort::sort_options options;
  options.format = array_format(array.dtype(), key);
  options.descending = reverse;
  if (!parallel.is_none()) {
    const long threads = parallel.cast<long>();
    if (threads < 1) throw py::value_error("sort(): parallel must be at least 1");
    options.threads = static_cast<unsigned>(threads);
  }
  if (!(array.flags() & py::array::c_style) ||
      (array.size() > 1 && array.strides(0) != array.itemsize()))
    throw py::value_error("sort(): the array is not contiguous (a view with strides): sort a "
                          "copy (numpy.ascontiguousarray)");
  if (!array.writeable()) throw py::value_error("sort(): the array is read-only");
  const std::span<std::byte> bytes(static_cast<std::byte*>(array.mutable_data()),
                                   static_cast<std::size_t>(array.nbytes()));
  {
    // The array stays alive (this frame holds it); other threads run Python meanwhile.
    py::gil_scoped_release unlocked;
    gpusort::sort_buffer(bytes, options);
  }
}

/// gpusort's exceptions as Python's: the message kept; an errno picks the OSError subclass
/// (FileNotFoundError, PermissionError, ...); running out of memory is MemoryError.
void translate_errors(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const gpusort::out_of_memory& e) {
    PyErr_SetObject(PyExc_MemoryError, message_text(e.what()).ptr());
  } catch (const gpusort::error& e) {
    const py::object message = message_text(e.what());
    if (e.code().value() != 0) {
      // OSError(errno, strerror) builds the subclass that errno maps to.
      const py::object error = py::reinterpret_steal<py::object>(PyObject_CallFunctionObjArgs(
          PyExc_OSError, py::int_(e.code().value()).ptr(), message.ptr(), nullptr));
      if (error) PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
    } else {
      PyErr_SetObject(PyExc_RuntimeError, message.ptr());
    }
  }
}

constexpr const char* module_doc =
    R"(gpusort: sort binary files of fixed-size records, on the GPU when there is one.

sort_file(inputs, output, **options) sorts files as the gpusort command does and returns its
statistics; sort(array, ...) sorts a numpy array in place. Keys are little-endian integers
(u32 u64 i32 i64), floats (f32 f64) in IEEE totalOrder, -NaN < -inf < ... < -0.0 < +0.0 < ...
< +inf < +NaN (numpy.sort puts every NaN last and does not order -0.0 before +0.0), or byte
strings in memcmp order. The sort is stable. Both release the GIL while they sort.
)";

constexpr const char* sort_file_doc = R"(Sorts files of records, as the gpusort command does.

Sorts the records of `inputs` (a path, or a list of paths concatenated in order) into
`output`, as `gpusort --output=OUTPUT INPUT...` does: the output is written to a temporary
file beside it and renamed into place, so a failed sort leaves the old output; an input may
be the output; "-" is stdin or stdout.

Options are the command's long options with '_' for '-', or the fields of the C++
gpusort::sort_options where those differ (in brackets); None leaves one at its default:
  type='u64' ('u32' 'u64' 'i32' 'i64' 'f32' 'f64' 'bytes:N'), record_size=int,
  key_offset=int, format='kv64' (a preset: also 'gensort', 'u32', ...), key='field' (the
  key field of .npy records with a structured dtype),
  reverse=bool [descending], stable=bool, unique=bool, merge=bool [merge_only] (the inputs
  are sorted already), buffer_size=int|'8G'|'50%' [buffer_bytes],
  temporary_directory=path [temp_dir], parallel=int [threads],
  devices='auto'|'all'|'none'|int|[int, ...], algorithm='auto'|'hrs'|'onesweep'|'cpu' [algo],
  gpu_memory=int|'4G' [gpu_memory_bytes], merge_on='auto'|'gpu'|'host',
  direct_io='auto'|'always'|'never' [direct], fsync=bool,
  trace=path [trace_path], verbose=bool, progress=bool (these two print on stderr).

Returns the statistics, the fields of gpusort::sort_stats (what `gpusort --stats=json`
prints): records, output_records, input_bytes, runs, merge_passes, spilled, backend,
strategy, wall_seconds and stages (name, busy_seconds, bytes, gb_per_s, start, end).

Raises TypeError for an unknown keyword or a value of the wrong type, ValueError for a value
or a combination the command refuses, OSError (its subclass for the errno:
FileNotFoundError, PermissionError, ...) when a system call fails, MemoryError when memory
runs out, RuntimeError otherwise; the message is the command's.
)";

constexpr const char* sort_doc = R"(Sorts a numpy array in place.

Sorts a 1-D numpy array in place: uint32, uint64, int32, int64, float32 or float64 (floats in
IEEE totalOrder), or a structured dtype whose records are sorted by the field `key` (one of
those types, or a bytes field: 'S' or 'V', in memcmp order). The sort is stable. reverse puts
the largest key first; parallel caps the threads (default: the CPUs available).

Raises TypeError for another dtype (objects, bool, float16, ...), ValueError for an array that
cannot be sorted in place: not 1-D, not contiguous (a strided view), read-only, big-endian.
)";

}  // namespace

PYBIND11_MODULE(gpusort, m) {
  m.doc() = module_doc;
  m.attr("__version__") = GPUSORT_VERSION;
  py::register_local_exception_translator(&translate_errors);

  m.def(
      "sort_file",
      [](const py::object& inputs, const py::object& output, const py::kwargs& kwargs) {
        const gpusort::cli::request req =
            parse_keywords(input_paths(inputs), path_text(output), kwargs);
        gpusort::sort_stats stats;
        {
          py::gil_scoped_release unlocked;
          stats = gpusort::sort_file(req.inputs, req.output, req.options);
        }
        return stats_dict(stats);
      },
      py::arg("inputs"), py::arg("output"), sort_file_doc);

  m.def("sort", &sort_array, py::arg("array"), py::arg("reverse") = false,
        py::arg("key") = py::none(), py::arg("parallel") = py::none(), sort_doc);

  m.def("version", &gpusort::version_string,
        "The version and the backends built in: 'gpusort 0.1.0 (CPU only)', as gpusort "
        "--version prints it.");
}
