"""The bundled agent programs (separate executables on the step protocol) and the agent kit
they are built on: uwf-script, uwf-builtin, uwf-subflow. Clients of the engine, not part of it.
"""
