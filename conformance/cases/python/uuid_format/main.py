import re
import uuid

u = uuid.uuid4()
print(u)
print(u.version, u.variant, len(u.hex), len(u.bytes), re.fullmatch(r"[0-9a-f-]{36}", str(u)) is not None)
print(uuid.uuid3(uuid.NAMESPACE_DNS, "example.org"))
print(uuid.uuid5(uuid.NAMESPACE_URL, "https://example.org/x"))
print(uuid.UUID("12345678-1234-5678-1234-567812345678").int)
print(len({uuid.uuid4() for _ in range(1000)}))
