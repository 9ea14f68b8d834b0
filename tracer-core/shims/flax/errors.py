"""flax.errors: the exceptions flax raises, with flax's messages (a tracelens shim of flax 0.12.8).

`__tracelens_code__` names the finding a raise of the class is reported as (TL190 otherwise).
"""

_DOCS = "https://flax.readthedocs.io/en/latest/api_reference/flax.errors.html#flax.errors."


class FlaxError(Exception):
    def __init__(self, message):
        full = f"{message} ({_DOCS}{type(self).__name__})"
        super().__init__(full)
        self.args = (full,)


class ScopeParamShapeError(FlaxError):
    __tracelens_code__ = "TL104"

    def __init__(self, param_name, scope_path, value_shape, init_shape):
        super().__init__(
            f'For parameter "{param_name}" in "{scope_path}", the given initializer is expected to generate shape '
            f"{init_shape}, but the existing parameter it received has shape {value_shape}."
        )


class ScopeParamNotFoundError(FlaxError):
    def __init__(self, param_name, scope_path):
        super().__init__(f'Could not find parameter named "{param_name}" in scope "{scope_path}".')


class ScopeCollectionNotFound(FlaxError):
    def __init__(self, col_name, var_name, scope_path):
        super().__init__(f'Tried to access "{var_name}" from collection "{col_name}" in "{scope_path}" but the collection is empty.')


class ModifyScopeVariableError(FlaxError):
    def __init__(self, col, variable_name, scope_path):
        super().__init__(f'Cannot update variable "{variable_name}" in "{scope_path}" because collection "{col}" is immutable.')


class InvalidRngError(FlaxError):
    def __init__(self, msg):
        super().__init__(msg)


class ApplyScopeInvalidVariablesTypeError(FlaxError):
    def __init__(self):
        super().__init__(
            "The first argument passed to an apply function should be a dictionary of collections. "
            "Each collection should be a dictionary with string keys."
        )


class ApplyScopeInvalidVariablesStructureError(FlaxError):
    def __init__(self, variables):
        super().__init__(
            'Expect the `variables` (first argument) passed to apply() to be a dict with the structure {"params": ...}, '
            'but got a dict with an extra params layer, i.e.  {"params": {"params": ... } }. '
            'You should instead pass in your dict\'s ["params"].'
        )


class CallCompactUnboundModuleError(FlaxError):
    def __init__(self):
        super().__init__("Can't call compact methods on unbound modules")
