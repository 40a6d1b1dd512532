import pytest

from scenegen.catalog import Catalog, load_catalog
from scenegen.errors import CatalogError

GROUPS_REQUIRED = {"kitchenware", "fruit", "bottles_cans", "boxes", "tools", "toys", "hardware", "containers"}


def test_catalog_size_and_groups(catalog):
    assert len(catalog) >= 40
    assert GROUPS_REQUIRED <= {c.group for c in catalog}
    for name in ("bowl", "plate", "mug", "cup", "pan", "spatula", "spoon", "cutting_board", "banana", "apple",
                 "bottle", "can", "box", "screwdriver", "hammer", "wrench", "marker", "block", "hex_nut", "bolt",
                 "washer", "bearing_ring", "bin", "tote", "tray", "basket", "colander", "sorter", "table"):
        assert name in catalog


def test_every_category_is_complete(catalog):
    for c in catalog:
        assert c.synonyms and c.plurals
        assert all(0 < lo <= hi < 2.0 for lo, hi in zip(c.size_min, c.size_max, strict=True))
        assert 0 < c.mass_range[0] <= c.mass_range[1]
        assert 0 < c.friction <= 1.5 and 0 <= c.restitution < 1
        assert c.colors and all(col in catalog.colors for col in c.colors)
        assert c.material in catalog.materials


def test_words_and_plurals(catalog):
    assert catalog.lookup("Bananas") == ("banana", True)
    assert catalog.lookup("chopping board") == ("cutting_board", False)
    assert catalog.lookup("spanner") == ("wrench", False)
    assert catalog.lookup("spaceship") is None
    assert "banana" in catalog.closest("bananna")


def test_flags(catalog):
    containers = {c.name for c in catalog.with_flag("container")}
    assert {"bowl", "bin", "mug", "basket"} <= containers
    assert "banana" not in containers
    with pytest.raises(CatalogError, match="unknown flag"):
        catalog.with_flag("edible")


def test_unknown_category_suggests(catalog):
    with pytest.raises(CatalogError, match="did you mean"):
        catalog.get("bwl")


def test_malformed_catalog_is_a_typed_error(tmp_path):
    with pytest.raises(CatalogError):
        Catalog({"colors": {}, "materials": {}, "size_classes": {}, "categories": {"x": {"group": "g"}}})
    bad = tmp_path / "c.json"
    bad.write_text("{not json")
    with pytest.raises(CatalogError, match="not valid JSON"):
        load_catalog(bad)
