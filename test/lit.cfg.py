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
