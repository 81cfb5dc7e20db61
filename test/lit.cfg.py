# lit configuration for GT's dialect and pass tests (test/Dialect, test/Transforms).
import os
import lit.formats

config.name = "GT"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt", "python", "unit", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.gt_obj_root, "test")
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"
config.environment["PATH"] = os.pathsep.join(
    [config.gt_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])

# Tests that run what they lower (mlir-cpu-runner) print through MLIR's runner utilities.
_lib = os.path.join(os.path.dirname(config.llvm_tools_dir), "lib")
config.substitutions.append(("%mlir_runner_utils", ",".join(
    os.path.join(_lib, name) for name in ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so"))))
