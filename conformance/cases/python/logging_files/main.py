import logging
import logging.handlers
import warnings

log = logging.getLogger("app")
log.setLevel(logging.DEBUG)
err = logging.StreamHandler()
err.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
err.setLevel(logging.WARNING)
log.addHandler(err)
rot = logging.handlers.RotatingFileHandler("app.log", maxBytes=2000, backupCount=2)
rot.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
log.addHandler(rot)
for i in range(200):
    log.debug("debug line %d", i)
log.warning("a warning")
log.error("an error: %s", {"k": 1})
try:
    1 / 0
except ZeroDivisionError:
    log.exception("caught")
rot.close()
import os
print(sorted(f for f in os.listdir(".") if f.startswith("app.log")))
print(open("app.log").read().splitlines()[-1])
warnings.warn("deprecated thing", DeprecationWarning)
warnings.simplefilter("always")
warnings.warn("shown warning")
print("done")
