import os
import re

from conan import ConanFile
from conan.errors import ConanInvalidConfiguration
from conan.tools.build import check_min_cppstd
from conan.tools.files import copy, load
from conan.tools.layout import basic_layout
from conan.tools.scm import Version

required_conan_version = ">=2.0"


class GclConan(ConanFile):
    """Conan 2 recipe of gcl, a header-only C++20 collective communication library.

    Components, named as gcl's own CMake package and pkg-config files name them:

    - ``core``: CMake target ``gcl::gcl``, pkg-config ``gcl``; threads only.
    - ``tcp`` (option ``with_tcp``, default True): CMake target ``gcl::tcp``, pkg-config
      ``gcl-tcp``; adds Boost's headers (Boost.Asio) for ``<gcl/transport/tcp.hpp>``. With
      ``-o gcl/*:with_tcp=False`` the component does not exist and Boost is not required.
    """

    name = "gcl"
    description = ("Header-only C++20 collective communication: policy-based transports, "
                   "operators and algorithms")
    license = "MIT"
    topics = ("collectives", "allreduce", "distributed", "header-only")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    options = {"with_tcp": [True, False]}
    default_options = {"with_tcp": True}
    exports_sources = "include/*", "LICENSE"
    no_copy_source = True

    @property
    def _min_cppstd(self):
        return 20

    @property
    def _compilers_minimum_version(self):
        # The oldest compilers gcl is built and tested with (Debian 12's).
        return {"gcc": "12", "clang": "14"}

    def set_version(self):
        # The one source of the version is include/gcl/version.hpp.
        text = load(self, os.path.join(self.recipe_folder, "include", "gcl", "version.hpp"))
        parts = [re.search(r"#define GCL_VERSION_%s (\d+)" % p, text).group(1)
                 for p in ("MAJOR", "MINOR", "PATCH")]
        self.version = ".".join(parts)

    def layout(self):
        basic_layout(self, src_folder=".")

    def requirements(self):
        if self.options.with_tcp:
            # Only Boost's headers are used (Boost.Asio, header-only): any Boost configuration
            # provides boost::headers; `-o boost/*:header_only=True` builds no Boost library.
            self.requires("boost/[>=1.74 <2]", transitive_headers=True)

    def package_id(self):
        # The same headers whatever the settings and options: with_tcp only decides which
        # components package_info() declares and whether Boost is required.
        self.info.clear()

    def validate(self):
        check_min_cppstd(self, self._min_cppstd)
        minimum = self._compilers_minimum_version.get(str(self.settings.compiler))
        if minimum and Version(self.settings.compiler.version) < minimum:
            raise ConanInvalidConfiguration(
                f"{self.ref} needs {self.settings.compiler} >= {minimum} (C++{self._min_cppstd}; "
                f"the oldest it is tested with)")

    def package(self):
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))
        copy(self, "*.hpp", os.path.join(self.source_folder, "include"),
             os.path.join(self.package_folder, "include"))

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "gcl")
        # CMakeDeps' and PkgConfigDeps' aggregate of all components must not take the names of
        # the core component (gcl::gcl, gcl.pc), which would then name two different things:
        # the aggregate gets a name nobody uses, as conan-center-index's recipes do.
        self.cpp_info.set_property("cmake_target_name", "gcl_all_do_not_use")
        self.cpp_info.set_property("pkg_config_name", "gcl_all_do_not_use")
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []

        core = self.cpp_info.components["core"]
        core.set_property("cmake_target_name", "gcl::gcl")
        core.set_property("pkg_config_name", "gcl")
        core.bindirs = []
        core.libdirs = []
        if self.settings.os in ("Linux", "FreeBSD"):
            core.system_libs = ["pthread"]

        if self.options.with_tcp:
            tcp = self.cpp_info.components["tcp"]
            tcp.set_property("cmake_target_name", "gcl::tcp")
            tcp.set_property("pkg_config_name", "gcl-tcp")
            tcp.bindirs = []
            tcp.libdirs = []
            tcp.requires = ["core", "boost::headers"]
