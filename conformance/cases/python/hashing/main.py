import hashlib
import hmac

data = b"The quick brown fox jumps over the lazy dog"
for name in ("md5", "sha1", "sha256", "sha512", "sha3_256", "blake2b", "blake2s"):
    print(name, hashlib.new(name, data).hexdigest())
print("shake", hashlib.shake_128(data).hexdigest(16))
print("hmac", hmac.new(b"key", data, "sha256").hexdigest())
print("pbkdf2", hashlib.pbkdf2_hmac("sha256", b"password", b"salt", 1000).hex())
with open("big.bin", "wb") as f:
    for i in range(1000):
        f.write(bytes([i % 256]) * 1000)
with open("big.bin", "rb") as f:
    print("file", hashlib.file_digest(f, "sha256").hexdigest())
h = hashlib.sha256()
for i in range(10000):
    h.update(b"%d" % i)
print("incremental", h.hexdigest())
