//go:build !linux

package snapshot

import (
	"context"
	"io"
	"os"
	"time"
)

// copyFile copies the regular file src to dst (created, must not exist)
// through buf, fingerprinting the bytes into h, and gives dst src's mode
// and modification time.
func copyFile(ctx context.Context, src, dst string, buf []byte, h *sum, _ bool, _ uint32, kp *keeper) (r copied, err error) {
	in, err := os.OpenFile(src, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return r, &errSource{err}
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return r, err
	}
	if !fi.Mode().IsRegular() {
		r.irregular = kind(fi.Mode())
		return r, nil
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return r, err
	}
	defer out.Close()
	if !kp.want(fi.Size()) {
		kp = nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		k, rerr := in.Read(buf)
		if k > 0 {
			h.write(buf[:k])
			if err := kp.write(buf[:k]); err != nil {
				return r, err
			}
			if _, err := out.Write(buf[:k]); err != nil {
				return r, err
			}
			r.size += int64(k)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return r, rerr
		}
	}
	if err := out.Chmod(fi.Mode() & modeBits); err != nil {
		return r, err
	}
	if err := os.Chtimes(dst, time.Time{}, fi.ModTime()); err != nil {
		return r, err
	}
	st, err := out.Stat()
	if err != nil {
		return r, err
	}
	r.mode, r.mtime = st.Mode(), st.ModTime()
	r.basePack, r.baseOff = kp.kept()
	return r, nil
}
