"""Toy extensions: each one module with its own registration line, loaded as a plugin
(OLTPLAB_PLUGINS=tests.toys.<module>), each passing the contract test of its kind."""
