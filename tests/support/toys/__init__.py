"""Toy extensions: each one module with its own registration line, loaded as a plugin
(OLTPLAB_PLUGINS=tests.support.toys.<module>), each passing the contract test of its kind."""

import ast
import os
from pathlib import Path

ROOT = Path(__file__).parents[3]


def with_plugin(toy: str) -> dict[str, str]:
    """This process's environment with the toy module `toy` loaded as a plugin by every
    command (and the checkout on PYTHONPATH, where the command finds it)."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return os.environ | {"OLTPLAB_PLUGINS": f"tests.support.toys.{toy}", "PYTHONPATH": path}


def code_words(module: Path) -> set[str]:
    """The names and strings of a module's code, leaving out its docstrings."""
    tree = ast.parse(module.read_text())
    documented = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, documented) and node.body and isinstance(node.body[0], ast.Expr)
    }
    words: set[str] = set()
    for node in ast.walk(tree):
        match node:
            case ast.Constant(value=str(text)) if id(node) not in docstrings:
                words.add(text)
            case ast.Name(id=word) | ast.Attribute(attr=word) | ast.alias(name=word):
                words.add(word)
            case ast.ImportFrom(module=str(word)):
                words.add(word)
    return words


def classes_and_registers(module: Path) -> tuple[ast.Module, list[str], list[ast.Call]]:
    """A toy module's tree, its classes, and its calls of `register`: what "one module and
    one registration line" is checked on."""
    tree = ast.parse(module.read_text())
    classes = [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
    registers = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        and node.func.id == "register"
    ]  # fmt: skip
    return tree, classes, registers
