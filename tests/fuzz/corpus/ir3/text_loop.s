˜
  mov.u32u32 r1.x, 0
  mov.u32u32 r1.y, 0
loop:
  add.u r1.y, r1.y, r1.x
  add.u r1.x, r1.x, 1
  cmps.u.lt p0.x, r1.x, r0.x
  br p0.x, #loop
  shl.b r2.x, r0.x, 2
  add.u r3.x, c0.x, r2.x
  mov.u32u32 r3.y, c0.y
  stg.u32 g[r3.x], r1.y, 1
  end
