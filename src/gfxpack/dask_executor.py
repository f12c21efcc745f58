"""What Dask workers preload: ``dask worker ADDRESS --preload gfxpack.dask_executor``.

The name users start their workers with; the runner itself is
:mod:`gfxpack.build.dask`, whose :func:`~gfxpack.build.dask.dask_setup` Dask calls
as each worker starts. Nothing in gfxpack imports this module.
"""

from gfxpack.build.dask import dask_setup

__all__ = ["dask_setup"]
