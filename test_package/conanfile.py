import os

from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout


class GclTestPackageConan(ConanFile):
    settings = "os", "arch", "compiler", "build_type"
    generators = "CMakeDeps", "VirtualRunEnv"
    test_type = "explicit"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    @property
    def _with_tcp(self):
        return bool(self.dependencies["gcl"].options.with_tcp)

    def generate(self):
        tc = CMakeToolchain(self)
        # Builds test_package_tcp too, and fails if gcl::tcp is missing, when the package was
        # made with the tcp component.
        tc.cache_variables["GCL_TEST_TCP"] = self._with_tcp
        tc.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        if can_run(self):
            programs = ["test_package"] + (["test_package_tcp"] if self._with_tcp else [])
            for program in programs:
                self.run(os.path.join(self.cpp.build.bindir, program), env="conanrun")
