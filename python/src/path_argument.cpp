// A path argument as Python passes it: a str or any os.PathLike.
#include "bindings.hpp"

namespace dlcaffe_python {

std::string PathArgument(const py::handle& value, const std::string& what) {
  try {
    return py::module_::import("os").attr("fspath")(value).cast<std::string>();
  } catch (const py::error_already_set&) {
    throw py::type_error(what + " must be a path, not " + std::string(py::str(value.get_type())));
  }
}

}  // namespace dlcaffe_python
