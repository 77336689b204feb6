import numpy as np
import pytest

import octwalk


def other_value(row):
    """A valid value of the row's member other than its default here, and the keyword value that sets it."""
    d = row["python_default"]
    if row["type"] == "bool":
        return not d
    if row["type"] == "choice":
        # gpu would need a device; any other choice is valid alone.
        return next(c for c in row["choices"] if c != d and c != "gpu")
    if row["type"] == "int":
        return 0 if d == "auto" else 2 * d
    return 0.5 * d if d > 0 else 1.0


def keyword_value(row, keyword, member_value):
    """The value of keyword that sets the member to member_value (epsilon is a length, negated switches)."""
    if keyword == row["name"]:
        return member_value
    if row["unit"].endswith("^2"):
        return member_value**0.5
    if row["type"] == "bool":
        return not member_value
    return member_value


def test_parameters_list_every_table_row_with_its_default():
    rows = octwalk.parameters()
    names = [r["name"] for r in rows]
    assert names == list(octwalk.make_parameters().to_dict())
    assert {"opening_angle", "epsilon_squared", "gravitational_constant", "n_leaf", "mac", "backend"} <= set(names)
    for r in rows:
        assert r["name"] in r["keywords"] and r["help"] and r["range"]
    eps = next(r for r in rows if r["name"] == "epsilon_squared")
    assert eps["default"] == 0.0 and eps["python_default"] == 1e-4 and eps["unit"] == "length^2"
    assert "epsilon" in eps["keywords"]


@pytest.mark.parametrize("row", octwalk.parameters(), ids=lambda r: r["name"])
def test_every_parameter_is_a_keyword_of_every_entry_point(row):
    # Inside [0, 1)^3, so that a periodic box_size = 1 holds them too.
    rng = np.random.default_rng(3)
    pos, mass = rng.uniform(0.1, 0.9, (64, 3)), np.full(64, 1 / 64)
    target = other_value(row)
    for keyword in row["keywords"]:
        value = keyword_value(row, keyword, target)
        p = octwalk.make_parameters(**{keyword: value})
        assert p[row["name"]] == pytest.approx(target), keyword
        g = octwalk.Gravity(pos, mass, **{keyword: value})
        assert g.parameters[row["name"]] == pytest.approx(target), keyword
        if row["name"] == "box_size":
            continue  # a periodic evaluation builds the Ewald table first: seconds (tests/unit has its own)
        octwalk.accelerations(pos, mass, **{keyword: value})
        octwalk.direct(pos, mass, **{keyword: value})


def test_a_keyword_changes_the_forces(plummer):
    pos, mass = plummer
    base = octwalk.accelerations(pos, mass)[0]
    for kw in ({"n_leaf": 4}, {"monopole": True}, {"mac": "octgrav"}, {"far_field_ratio": 0.0}):
        assert not np.array_equal(octwalk.accelerations(pos, mass, **kw)[0], base), kw
    # Text is read as run.json reads it.
    assert np.array_equal(octwalk.accelerations(pos, mass, theta="0.5")[0], base)


def test_unknown_or_repeated_keywords_are_type_errors(plummer):
    pos, mass = plummer
    with pytest.raises(TypeError, match=r"accelerations\(\) got an unexpected keyword argument 'thetta'"):
        octwalk.accelerations(pos, mass, thetta=0.5)
    with pytest.raises(TypeError, match="theta and opening_angle"):
        octwalk.accelerations(pos, mass, theta=0.5, opening_angle=0.4)
    with pytest.raises(TypeError, match="epsilon and epsilon_squared"):
        octwalk.Gravity(pos, mass, epsilon=0.1, epsilon_squared=0.01)
    with pytest.raises(TypeError, match="n_leaf must be an int"):
        octwalk.accelerations(pos, mass, n_leaf=8.5)
    with pytest.raises(TypeError, match="monopole must be True or False"):
        octwalk.accelerations(pos, mass, monopole=1)


@pytest.mark.parametrize(
    "kw, text",
    [
        ({"theta": 1.5}, "opening_angle = 1.5 is invalid"),
        ({"epsilon": -0.1}, "epsilon = -0.1"),
        ({"epsilon_squared": float("nan")}, "epsilon_squared"),
        ({"n_leaf": 0}, "n_leaf = 0 is invalid"),
        ({"mac": "barnes-hut"}, "mac = 'barnes-hut' is invalid"),
        ({"G": 0.0}, "gravitational_constant = 0 is invalid"),
        ({"theta": "half"}, "opening_angle = 'half' is invalid"),
    ],
)
def test_out_of_range_values_are_value_errors_naming_the_parameter(kw, text, plummer):
    pos, mass = plummer
    with pytest.raises(ValueError, match=text) as e:
        octwalk.accelerations(pos, mass, **kw)
    assert isinstance(e.value, octwalk.ParameterError)
