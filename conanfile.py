import os
import re

from conan import ConanFile
from conan.tools.files import copy, load
from conan.tools.layout import basic_layout


class GclConan(ConanFile):
    """Conan 2 recipe of gcl, a header-only C++20 collective communication library.

    Components: ``core`` (CMake target gcl::gcl, pkg-config gcl; threads only) and ``tcp``
    (gcl::tcp; adds Boost.Asio's headers for include/gcl/transport/tcp.hpp).
    """

    name = "gcl"
    description = ("Header-only C++20 collective communication: policy-based transports, "
                   "operators and algorithms")
    license = "MIT"
    topics = ("collectives", "allreduce", "distributed", "header-only")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    exports_sources = "include/*", "LICENSE"
    no_copy_source = True

    def set_version(self):
        # The one source of the version is include/gcl/version.hpp.
        text = load(self, os.path.join(self.recipe_folder, "include", "gcl", "version.hpp"))
        parts = [re.search(r"#define GCL_VERSION_%s (\d+)" % p, text).group(1)
                 for p in ("MAJOR", "MINOR", "PATCH")]
        self.version = ".".join(parts)

    def layout(self):
        basic_layout(self, src_folder=".")

    def requirements(self):
        self.requires("boost/[>=1.74 <2]", options={"header_only": True})

    def validate(self):
        from conan.tools.build import check_min_cppstd
        check_min_cppstd(self, 20)

    def package_id(self):
        self.info.clear()

    def package(self):
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))
        copy(self, "*.hpp", os.path.join(self.source_folder, "include"),
             os.path.join(self.package_folder, "include"))

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "gcl")
        self.cpp_info.set_property("pkg_config_name", "gcl")
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []

        core = self.cpp_info.components["core"]
        core.set_property("cmake_target_name", "gcl::gcl")
        core.set_property("pkg_config_name", "gcl")
        core.bindirs = []
        core.libdirs = []
        if self.settings.os in ("Linux", "FreeBSD"):
            core.system_libs = ["pthread"]

        tcp = self.cpp_info.components["tcp"]
        tcp.set_property("cmake_target_name", "gcl::tcp")
        tcp.set_property("pkg_config_name", "gcl-tcp")
        tcp.bindirs = []
        tcp.libdirs = []
        tcp.requires = ["core", "boost::headers"]
